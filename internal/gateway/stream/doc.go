// Package stream serves agentd's WebSocket event stream, GET /v1/stream:
// a client subscribes to one session, one agent's sessions or every
// session, and receives their events as they happen, each with its log
// sequence number. A client that reconnects with the last sequence numbers
// it saw gets every stored event it missed, from the log, and none twice.
//
// # Connecting
//
// The gateway mounts a Handler at GET /v1/stream behind the middleware that
// authenticates the request and checks Host and Origin; the upgrade itself
// accepts any Origin (coder/websocket's own same-origin check is turned
// off, since it would refuse what the middleware allowed). A subscription
// may be given in the query, so that a simple client need not send a
// message:
//
//	/v1/stream?session=assistant/chat:alice&after=12
//	/v1/stream?agent=assistant&since=2025-01-02T15:04:05Z&cursors=7:130,9:4
//	/v1/stream?all=1
//
// (id=NAME names that subscription; it is "url" otherwise.) A malformed
// query is refused with 400 before the upgrade.
//
// # Client messages
//
// JSON text messages:
//
//	{"type":"subscribe","id":"s1","session":"assistant/chat:alice","after":12}
//	{"type":"subscribe","id":"s2","agent":"assistant","cursors":{"7":130,"9":4},"since":"2025-01-02T15:04:05Z"}
//	{"type":"subscribe","id":"s3"}
//	{"type":"unsubscribe","id":"s1"}
//	{"type":"ping"}
//
// A session subscription with after replays the stored events with a
// greater sequence number (after 0: the whole log), then goes live;
// without after it is live only. A session that does not exist yet may be
// subscribed to: its events arrive once it does.
//
// An agent subscription (agent) or an all-sessions one (neither session
// nor agent) replays, for each session in cursors (keyed by session id or
// address), the events after its cursor, and for each other session
// updated at or after since, its whole log; without cursors or since it is
// live only. A client that passes every session it has seen in cursors,
// and as since the time of the last event it received, misses nothing:
// any session it has no cursor for that changed after that time is
// replayed in full. At most Options.MaxReplaySessions sessions are
// replayed; if more were updated since, an error frame says the replay
// was truncated.
//
// A connection may hold Options.MaxSubscriptions subscriptions; an event
// that matches several is sent once for each.
//
// # Server frames
//
//	{"type":"subscribed","sub":"s1"}
//	{"type":"event","sub":"s1","session":"assistant/chat:alice","session_id":7,"seq":13,"turn":42,
//	 "kind":"text-delta","time":"2025-01-02T15:04:05.123456789Z","data":{"text":"Hel","step":1,"attempt":1}}
//	{"type":"replayed","sub":"s1","session":"assistant/chat:alice","session_id":7,"seq":13,"done":true}
//	{"type":"unsubscribed","sub":"s1"}
//	{"type":"pong"}
//	{"type":"error","sub":"s1","error":"bad message: id is missing"}
//
// kind is the event kind with "_" written "-" (turn-start, text-delta,
// thought, text, tool-call, tool-start, tool-end, tool-result,
// approval-requested, approval-resolved, turn-end, error, session-state,
// input, …); seq is the log sequence number, 0 for live-only events
// (turn-start, text-delta, tool-start, tool-end, session-state), which are
// never replayed; data is the event's payload as stored.
//
// A client that falls behind (its queue holds several frames when the
// connection can be written again) gets the text deltas queued one after
// the other for the same subscription, session, turn, step and attempt,
// and of the same kind (reasoning or not), in one event frame: data.text
// is their texts joined, the other fields are the first one's (its time),
// and "deltas" says how many it carries (absent on a frame of one):
//
//	{"type":"event","sub":"s1","session":"assistant/chat:alice","session_id":7,"seq":0,"turn":42,
//	 "kind":"text-delta","time":"2025-01-02T15:04:05.123456789Z","deltas":3,"data":{"text":"Hello, wo","step":1,"attempt":1}}
//
// A client that appends each delta's text to its step's text reads the
// same text either way; nothing else is joined, and order is kept.
//
// A replay ends with replayed frames: for an agent or all-sessions
// subscription one per replayed session (its last sequence number sent)
// and a last one with done and no session; for a session subscription one,
// with done. Live events that arrived during the replay follow it.
// subscribed always comes before the subscription's events, and nothing of
// a subscription follows its unsubscribed. A bad message is answered with
// an error frame and the connection stays open.
//
// # Order and resumption
//
// A subscription is routed live events before the log is read, so an
// event committed during the read is either read or routed; one that is
// both is sent once (a stored event with a sequence number at or below the
// last one replayed for its session is dropped). Within one session,
// stored events arrive in sequence order.
//
// # Slow clients and closing
//
// Each connection has a bounded queue (Options.MaxQueue events and
// Options.MaxQueueBytes bytes). A client that falls that far behind is
// closed with status 1008 and a reason such as "slow consumer: 1024 events
// queued"; the runtime and other clients never wait for it. The Handler
// holds one subscription to the event bus; if it ever falls behind the
// bus, every connection is closed with status 1013. Either way a client
// reconnects with its cursors and loses nothing stored. Close closes every
// connection with status 1001. The server pings every
// Options.PingInterval and drops a peer that does not answer within
// Options.PongTimeout.
//
// # Memory
//
// An idle connection costs one goroutine (its read loop, blocked in the
// kernel), the WebSocket state and the buffers of the hijacked HTTP
// connection, and a timer: a writer goroutine exists only while frames
// wait, and queues are allocated only while they hold something.
// TestIdleConnectionMemory measures it.
package stream
