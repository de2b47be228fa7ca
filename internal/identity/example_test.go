package identity_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"agentd/approval"
	"agentd/internal/identity"
)

func Example() {
	dataDir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dataDir)

	keys, err := identity.Open(filepath.Join(dataDir, "keys"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// A Solana keypair file: the 32-byte seed, then the 32-byte public key.
	solana := "[157,97,177,157,239,253,90,96,186,132,74,244,146,236,44,196,68,73,197,105,123,50,105,25,112,59,172,3,28,174,127,96," +
		"215,90,152,1,130,177,10,183,213,75,254,211,201,100,7,58,14,225,114,243,218,166,35,37,175,2,26,104,247,7,81,26]"
	pub, err := keys.Import("assistant", strings.NewReader(solana), false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("public key:", pub)

	m := approval.Message{Text: "book a table for two", CreatedAt: time.Now(), ID: "msg-17", ChannelID: "telegram:4242"}
	a, err := keys.Approve("assistant", m, time.Now(), "https://tables.example/mcp", "reserve", `{"people":2}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("signed by:", a.Pubkey)
	fmt.Println("check:", a.Check("https://tables.example/mcp", "reserve", `{"people": 2}`))

	_, err = keys.Generate("assistant", false)
	fmt.Println(err != nil)
	// Output:
	// public key: FVen3X669xLzsi6N2V91DoiyzHzg1uAgqiT8jZ9nS96Z
	// signed by: FVen3X669xLzsi6N2V91DoiyzHzg1uAgqiT8jZ9nS96Z
	// check: <nil>
	// true
}
