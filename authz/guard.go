package authz

// Guard decides the requests of callers to one server: it holds the
// server's per-caller rules and its rate limiter, either nil for none.
type Guard struct {
	Rules   *Rules
	Limiter *Limiter
}

// Check decides a request of c that reaches the server (a tool call, a
// prompt get, a resource read): the rules first, then the rate limit,
// which counts only the calls the rules let through. It returns Allowed
// and nil, or Denied and a *DeniedError, or Limited and a *LimitError.
// Listings are decided with Rules.Allow alone: they count no call.
func (p Guard) Check(c Caller, kind Kind, name string) (Verdict, error) {
	if err := p.Rules.Check(c, kind, name); err != nil {
		return Denied, err
	}
	if err := p.Limiter.Allow(c); err != nil {
		return Limited, err
	}
	return Allowed, nil
}
