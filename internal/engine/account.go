package engine

// Account is spending shared by a turn and the turns of the sub-agents it
// started: one max_usd_per_turn bounds them together. The engine reserves
// a call's bounded cost before the call and settles it with what the call
// cost after, so that turns running at once cannot overspend it together.
// Safe for concurrent use.
type Account interface {
	// Key is "<session id>:<turn id>" of the paying turn; usage rows carry
	// it as their account.
	Key() string
	// Limit is the account's USD limit; 0: none.
	Limit() float64
	// Reserve takes usd from what is left and reports true, or takes
	// nothing and reports false when less than usd is left. spent is what
	// the account had spent and reserved before this call.
	Reserve(usd float64) (ok bool, spent float64)
	// Settle replaces a reservation by what the call it was made for
	// actually cost.
	Settle(reserved, actual float64)
}
