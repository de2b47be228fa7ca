package doctor

import (
	"agentd/internal/agent"
)

// workspaces checks each agent's workspace setting: one that would give
// the file and exec tools agentd's data (the data directory, a folder
// holding it, one in it outside workspace/) fails, as every file and exec
// call of the agent does. The default workspace is not listed.
func (d *doctor) workspaces(defs []*agent.Definition) {
	const area = "workspace"
	for _, def := range defs {
		if def.Workspace == "" {
			continue
		}
		name := "agent " + def.ID
		dir, err := def.WorkspaceIn(d.dir)
		if err != nil {
			d.r.add(area, name, Fail, err.Error(), "set workspace in "+relTo(d.dir, def.File)+
				" to a folder outside the data directory, or leave it out for "+agent.WorkspaceDir+"/"+def.ID)
			continue
		}
		d.r.add(area, name, OK, dir, "")
	}
}
