package service_test

import (
	"fmt"
	"strings"

	"agentd/internal/service"
)

// The unit for a data directory, and where it goes.
func ExampleRender() {
	u := service.Unit{Binary: "/usr/local/bin/agentd", DataDir: "/srv/agentd", RunAs: "agentd", Group: "agentd"}
	b, err := service.Render(u)
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "ExecStart=") || strings.HasPrefix(line, "ReadWritePaths=") || strings.HasPrefix(line, "User=") {
			fmt.Println(line)
		}
	}
	path, _ := service.Path(u, "", func(string) string { return "" })
	fmt.Println(path)
	// Output:
	// ExecStart=/usr/local/bin/agentd --data /srv/agentd serve
	// User=agentd
	// ReadWritePaths=/srv/agentd
	// /etc/systemd/system/agentd.service
}
