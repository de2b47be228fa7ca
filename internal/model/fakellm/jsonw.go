package fakellm

import (
	"strconv"
)

const hexDigits = "0123456789abcdef"

func appendInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }

func appendUint(dst []byte, n uint64) []byte { return strconv.AppendUint(dst, n, 10) }
