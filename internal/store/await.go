package store

import "context"

// Await waits for a store's writer to answer on reply, or for ctx to end.
// An answer that is already there when ctx ends counts: the write was
// done, and the caller must know. On ctx's end without an answer it
// returns ctx.Err(), and the writer may still perform the write.
func Await(ctx context.Context, reply <-chan struct{}) error {
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		select {
		case <-reply: // answered after all
			return nil
		default:
			return ctx.Err()
		}
	}
}
