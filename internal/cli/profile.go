package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// profiles are agentd serve's optional CPU and allocation profiles, for
// finding where a running daemon's time and memory go (go tool pprof reads
// them). Both are off unless asked for: a CPU profile costs a signal every
// 10 ms.
type profiles struct {
	cpu, mem string // file names; "" is off
	cpuFile  *os.File
}

// start begins the CPU profile, if one is asked for.
func (p *profiles) start() error {
	if p.cpu == "" {
		return nil
	}
	f, err := os.OpenFile(p.cpu, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("cpu profile: %w", err)
	}
	p.cpuFile = f
	return nil
}

// stop ends the CPU profile and writes the allocation profile (every
// allocation since the start, sampled as the Go runtime does by default).
func (p *profiles) stop() error {
	var errs []error
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cpu profile: %w", err))
		}
		p.cpuFile = nil
	}
	if p.mem != "" {
		runtime.GC() // the live heap as of now, beside the allocations
		f, err := os.OpenFile(p.mem, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("allocation profile: %w", err))
		}
	}
	return errors.Join(errs...)
}
