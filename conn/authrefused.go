package conn

import (
	"time"
)

func sayAuthRefused(phrase string, _ Transition, _ time.Duration) (string, []any) {
	return phrase + "; not retrying: fix the credentials (HTTP.Header or HTTP.OAuthHandler), then " + recoverHint, nil
}
