package sandbox

import "os"

// minimalPath is the PATH every command gets.
const minimalPath = "/usr/local/bin:/usr/bin:/bin"

// environ returns a command's whole environment: the minimal set, then
// sp.Env. A later KEY wins in execve's lookups of most programs, so sp.Env
// cannot be shadowed by the minimal set but can replace it (HOME, LANG).
func environ(sp *Spec) []string {
	env := []string{
		"PATH=" + minimalPath,
		"HOME=" + sp.Workspace,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"TMPDIR=/tmp",
	}
	return dedupEnv(append(env, sp.Env...))
}

// dedupEnv keeps the last value of each name, in first-seen order.
func dedupEnv(env []string) []string {
	idx := map[string]int{}
	var out []string
	for _, kv := range env {
		name := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				name = kv[:i]
				break
			}
		}
		if i, ok := idx[name]; ok {
			out[i] = kv
			continue
		}
		idx[name] = len(out)
		out = append(out, kv)
	}
	return out
}

func isRoot() bool { return os.Geteuid() == 0 }
