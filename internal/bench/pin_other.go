//go:build !linux

package bench

import "errors"

var errNoPinning = errors.New("bench: pinning processes to CPUs needs Linux")

func allowedCPUs() ([]int, error) { return nil, errNoPinning }

func pin(int, []int) error { return errNoPinning }
