package agentsys

import (
	"crypto/rand"
	"crypto/sha3"
	"math/big"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"agentd/internal/store"
)

// ids makes cuid2 ids (store.InstanceIDLen characters: a lowercase letter,
// then base-36 digits of a SHA3-512 hash of the time, a random salt, a
// counter and the node's fingerprint), as the cuid2 reference does: ids
// made at once on many nodes do not collide, and an id tells nothing of
// when or where it was made.
type ids struct {
	count       atomic.Uint64
	fingerprint string
	now         func() time.Time
}

func newIDs(now func() time.Time) *ids {
	g := &ids{now: now}
	host, _ := os.Hostname()
	g.fingerprint = host + strconv.Itoa(os.Getpid()) + rand.Text()
	var b [4]byte
	rand.Read(b[:])
	g.count.Store(uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3]))
	return g
}

// next returns a new id.
func (g *ids) next() string {
	var first [1]byte
	for {
		// 26 letters: reject the bytes past the last whole multiple so
		// that every letter is as likely.
		rand.Read(first[:])
		if first[0] < 26*9 {
			break
		}
	}
	in := strconv.FormatInt(g.now().UnixNano(), 36) + rand.Text() +
		strconv.FormatUint(g.count.Add(1), 36) + g.fingerprint
	sum := sha3.Sum512([]byte(in))
	digits := new(big.Int).SetBytes(sum[:]).Text(36)
	// The first digit of a number is skewed (never 0); drop it.
	return string('a'+first[0]%26) + digits[1:store.InstanceIDLen]
}
