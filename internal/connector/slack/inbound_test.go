package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector"
)

// Events to inbound messages, and the ones agentd does not take.
func TestInbound(t *testing.T) {
	p, err := newPlatform(connector.Config{Token: "xoxb-1", AppToken: "xapp-1"}, connector.PlatformDeps{})
	if err != nil {
		t.Fatal(err)
	}
	p.self = identity{User: "UBOT", Bot: "BBOT"}
	p.threads.add("C1/1700000000.000050")
	at := time.Unix(1700000000, 100*int64(time.Millisecond))
	tests := []struct {
		name  string
		event string
		want  *connector.Inbound // nil: not taken
	}{
		{"dm", `{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hi","ts":"1700000000.100000"}`,
			&connector.Inbound{Key: "sl:D1:1700000000.100000", Chat: connector.Chat{ID: "D1", Kind: "dm", Team: "T1"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "hi", At: at}},
		{"dm in a thread", `{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hi","ts":"1700000000.100000","thread_ts":"1699999999.000001"}`,
			&connector.Inbound{Key: "sl:D1:1700000000.100000", Chat: connector.Chat{ID: "D1", Kind: "dm", Team: "T1", Thread: "1699999999.000001"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "hi", At: at}},
		{"channel top level: its own thread", `{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"lunch?","ts":"1700000000.100000"}`,
			&connector.Inbound{Key: "sl:C1:1700000000.100000", Chat: connector.Chat{ID: "C1", Kind: "group", Team: "T1", Thread: "1700000000.100000"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "lunch?", At: at}},
		{"mention in the text, removed", `{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<@UBOT>  what's <@U2> doing?","ts":"1700000000.100000","user_profile":{"display_name":"ada","real_name":"Ada L"}}`,
			&connector.Inbound{Key: "sl:C1:1700000000.100000", Chat: connector.Chat{ID: "C1", Kind: "group", Team: "T1", Thread: "1700000000.100000"}, User: "U1", Name: "ada", MessageID: "1700000000.100000", Text: "what's <@U2> doing?", Mentioned: true, At: at}},
		{"app_mention: same key", `{"type":"app_mention","channel":"C1","user":"U1","text":"<@UBOT|agentd> hi","ts":"1700000000.100000"}`,
			&connector.Inbound{Key: "sl:C1:1700000000.100000", Chat: connector.Chat{ID: "C1", Kind: "group", Team: "T1", Thread: "1700000000.100000"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "hi", Mentioned: true, At: at}},
		{"mpim is a group", `{"type":"message","channel":"G1","channel_type":"mpim","user":"U1","text":"x","ts":"1700000000.100000"}`,
			&connector.Inbound{Key: "sl:G1:1700000000.100000", Chat: connector.Chat{ID: "G1", Kind: "group", Team: "T1", Thread: "1700000000.100000"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "x", At: at}},
		{"reply in a thread the bot posted in", `{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"and?","ts":"1700000000.100000","thread_ts":"1700000000.000050","parent_user_id":"U1"}`,
			&connector.Inbound{Key: "sl:C1:1700000000.100000", Chat: connector.Chat{ID: "C1", Kind: "group", Team: "T1", Thread: "1700000000.000050"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "and?", ReplyToBot: true, At: at}},
		{"reply in a thread the bot started", `{"type":"message","channel":"C2","channel_type":"channel","user":"U1","text":"and?","ts":"1700000000.100000","thread_ts":"1600000000.000001","parent_user_id":"UBOT"}`,
			&connector.Inbound{Key: "sl:C2:1700000000.100000", Chat: connector.Chat{ID: "C2", Kind: "group", Team: "T1", Thread: "1600000000.000001"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "and?", ReplyToBot: true, At: at}},
		{"reply in another thread", `{"type":"message","channel":"C2","channel_type":"channel","user":"U1","text":"and?","ts":"1700000000.100000","thread_ts":"1600000000.000002","parent_user_id":"U3"}`,
			&connector.Inbound{Key: "sl:C2:1700000000.100000", Chat: connector.Chat{ID: "C2", Kind: "group", Team: "T1", Thread: "1600000000.000002"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "and?", At: at}},
		{"a file", `{"type":"message","subtype":"file_share","channel":"D1","channel_type":"im","user":"U1","text":"see","ts":"1700000000.100000","files":[{"id":"F1","name":"a.png","mimetype":"image/png","size":3,"url_private":"https://files.slack.com/x"}]}`,
			&connector.Inbound{Key: "sl:D1:1700000000.100000", Chat: connector.Chat{ID: "D1", Kind: "dm", Team: "T1"}, User: "U1", Name: "U1", MessageID: "1700000000.100000", Text: "see", At: at,
				Attachments: []connector.Attachment{{ID: "F1", Name: "a.png", Type: "image/png", Size: 3, URL: "https://files.slack.com/x"}}}},
		{"a bot's message", `{"type":"message","channel":"D1","channel_type":"im","user":"U9","bot_id":"B9","text":"x","ts":"1"}`, nil},
		{"our own message", `{"type":"message","channel":"D1","channel_type":"im","user":"UBOT","text":"x","ts":"1"}`, nil},
		{"an edit", `{"type":"message","subtype":"message_changed","channel":"D1","channel_type":"im","ts":"1","message":{"user":"U1","text":"y"}}`, nil},
		{"a join", `{"type":"message","subtype":"channel_join","channel":"C1","user":"U1","text":"joined","ts":"1"}`, nil},
		{"a reaction", `{"type":"reaction_added","user":"U1","reaction":"+1"}`, nil},
		{"no ts", `{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"x"}`, nil},
		{"not JSON", `[1,2`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb := eventCallback{Type: "event_callback", TeamID: "T1", Event: json.RawMessage(tt.event)}
			got, ok := p.inbound(cb)
			if tt.want == nil {
				if ok {
					t.Fatalf("taken: %+v", got)
				}
				return
			}
			if !ok {
				t.Fatal("not taken")
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Verify accepts exactly what the standard library's HMAC-SHA256 of the v0
// basestring signs, within 5 minutes.
func FuzzVerify(f *testing.F) {
	f.Add("secret", int64(1700000000), []byte(`{"type":"event_callback"}`), int64(0), 0)
	f.Add("", int64(0), []byte{}, int64(301), 3)
	f.Fuzz(func(t *testing.T, secret string, ts int64, body []byte, skew int64, flip int) {
		tss := strconv.FormatInt(ts, 10)
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte("v0:" + tss + ":"))
		m.Write(body)
		sig := "v0=" + hex.EncodeToString(m.Sum(nil))
		if Sign(secret, tss, body) != sig {
			t.Fatalf("Sign = %s, want %s", Sign(secret, tss, body), sig)
		}
		now := time.Unix(ts, 0).Add(time.Duration(skew%1000) * time.Second)
		fresh := skew%1000 <= 300 && skew%1000 >= -300
		err := Verify(secret, tss, sig, body, now)
		if want := fresh && secret != ""; (err == nil) != want {
			t.Fatalf("Verify(signed, skew %ds) = %v, want ok %v", skew%1000, err, want)
		}
		if len(body) > 0 {
			b := append([]byte(nil), body...)
			b[abs(flip)%len(b)] ^= 1
			if Verify(secret, tss, sig, b, now) == nil {
				t.Fatal("a changed body verified")
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// stripMention removes every mention of the bot, keeps every other, and
// says whether there was one.
func FuzzStripMention(f *testing.F) {
	f.Add("<@UBOT> hi <@U2>")
	f.Add("<@UBOT|agentd>hi<@UBOT>")
	f.Add("<@UBOTX> <@UBO>")
	f.Add("<@<@UBOT>UBOT>")
	f.Fuzz(func(t *testing.T, text string) {
		ours := func(s string) bool {
			for _, m := range mentionRE.FindAllStringSubmatch(s, -1) {
				if m[1] == "UBOT" {
					return true
				}
			}
			return false
		}
		out, named := stripMention(text, "UBOT")
		if ours(out) {
			t.Fatalf("stripMention(%q) = %q: a mention is left", text, out)
		}
		if named != ours(text) {
			t.Fatalf("stripMention(%q): named %v, want %v", text, named, ours(text))
		}
	})
}

// tsTime reads a ts as strconv.ParseFloat does, to the microsecond.
func FuzzTSTime(f *testing.F) {
	f.Add("1700000000.000100")
	f.Add("1.5")
	f.Add("x.y")
	now := time.Unix(42, 0)
	f.Fuzz(func(t *testing.T, ts string) {
		got := tsTime(ts, func() time.Time { return now })
		sec, frac, _ := strings.Cut(ts, ".")
		s, err := strconv.ParseInt(sec, 10, 64)
		us, ferr := strconv.ParseInt((frac + "000000")[:6], 10, 64)
		digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
		if err != nil || ferr != nil || !digits(sec) || !digits(frac) {
			return // not a ts Slack makes; any time is fine
		}
		if s < 0 || s > 1<<40 {
			return
		}
		fl, err := strconv.ParseFloat(sec+"."+(frac + "000000")[:6], 64)
		if err != nil {
			return
		}
		if d := got.Sub(time.Unix(s, us*1000)); d != 0 {
			t.Fatalf("tsTime(%q) = %v, want %v", ts, got, time.Unix(s, us*1000))
		}
		if diff := float64(got.UnixMicro())/1e6 - fl; diff > 1e-3 || diff < -1e-3 {
			t.Fatalf("tsTime(%q) = %v, ParseFloat %v", ts, got, fl)
		}
	})
}
