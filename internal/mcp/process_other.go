//go:build !unix

package mcp

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

// killGroup stops the child; without process groups, only the child.
func killGroup(cmd *exec.Cmd, hard bool) {
	_ = cmd.Process.Kill()
}
