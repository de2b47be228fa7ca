//go:build !amd64 && !arm64

package sandbox

// On another architecture agentd knows no list: bwrap gets no filter.
const (
	seccompArchNative = 0
	seccompX32Bit     = 0
)

var seccompDenied []uint32
