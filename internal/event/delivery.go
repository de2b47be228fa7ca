package event

// Delivery ops.
const (
	// DeliveryFailed: a connector gave up delivering a reply (its tries ran
	// out, or the platform refused it for good).
	DeliveryFailed = "failed"
	// DeliveryInDoubt: a crash fell between the platform making a message
	// and agentd recording it, on a platform that cannot find it again
	// (Telegram): the reply was sent again and may show twice.
	DeliveryInDoubt = "in_doubt"
	// DeliveryRetried: a person asked a failed delivery to be tried again.
	DeliveryRetried = "retried"
)

// DeliveryData is the payload of a delivery event: what became of one
// reply a connector was to deliver to a chat. A delivered reply writes no
// event; a failure is never silent.
type DeliveryData struct {
	Op        string `json:"op"`              // DeliveryFailed, DeliveryInDoubt or DeliveryRetried
	Connector string `json:"connector"`       // the integration row's name
	Platform  string `json:"platform"`        // telegram, discord, slack
	Turn      int64  `json:"turn"`            // the turn whose reply it is (0: a notice)
	Outbox    int64  `json:"outbox"`          // the outbox row
	Tries     int    `json:"tries"`           // the tries made
	Error     string `json:"error,omitempty"` // the last error, redacted: never a token
}
