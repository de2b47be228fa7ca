package connector

import (
	"context"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
)

// sweepLoop sweeps at start and every SweepEvery until ctx ends.
func (in *instance) sweepLoop(ctx context.Context) {
	t := time.NewTicker(in.m.o.SweepEvery)
	defer t.Stop()
	for {
		in.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep finds what the Ended hook missed (a crash between a turn's end
// and the hook, a full queue, a turn run on another node): every turn_end
// past a conversation's bookmark gets its outbox row (opening is
// idempotent), and a row left streaming with no streamer here, whose turn
// has ended, goes to the worker.
func (in *instance) sweep(ctx context.Context) {
	convs, err := in.m.st.ConversationsBehind(ctx, in.name, 100)
	if err != nil {
		in.sweepFailed(ctx, err)
		return
	}
	for _, c := range convs {
		chat := chatOf(c.Chat, c.ChatJSON)
		in.m.remember(c.SessionID, convRef{connector: in.name, chat: chat})
		evs, err := in.m.st.Events(ctx, c.SessionID, c.SeenSeq, 500)
		if err != nil {
			in.sweepFailed(ctx, err)
			return
		}
		seen := c.SeenSeq
		for _, e := range evs {
			var end event.TurnEndData
			if e.Kind == event.TurnEnd && e.Turn != 0 && e.Decode(&end) == nil {
				if in.open(ctx, ended{session: c.SessionID, turn: e.Turn, end: end, chat: chat}) != nil {
					break // the bookmark stays before it: the next sweep opens it
				}
			}
			seen = max(seen, e.Seq)
		}
		if seen > c.SeenSeq {
			if err := in.m.st.SetSeen(ctx, in.name, c.Chat, seen, ""); err != nil {
				in.sweepFailed(ctx, err)
				return
			}
		}
	}
	rows, err := in.m.st.Outbox(ctx, store.OutboxFilter{Connector: in.name, State: store.OutStreaming, Limit: 100})
	if err != nil {
		in.sweepFailed(ctx, err)
		return
	}
	for _, it := range rows {
		if in.streaming(it.SessionID) {
			continue
		}
		chat := in.chatOfRow(it)
		(&stream{in: in, session: it.SessionID, chat: chat}).settle(ctx, turnState{turn: it.Turn, row: &it})
	}
	in.wake()
}

func (in *instance) sweepFailed(ctx context.Context, err error) {
	if ctx.Err() == nil {
		in.m.log.Warn("connector: sweep failed; it runs again", "connector", in.name, "err", err)
	}
}
