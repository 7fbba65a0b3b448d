package conn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// methodSubscriptionsListen is the stream of notifications of protocol
// 2026-07-28; notificationListenAcked is the server's first message on
// it, once the subscriptions are in place.
const (
	methodSubscriptionsListen = "subscriptions/listen"
	notificationListenAcked   = "notifications/subscriptions/acknowledged"
)

// listenAck records whether a generation sent subscriptions/listen and
// whether the server acknowledged it. Nil-safe.
type listenAck struct {
	sent atomic.Bool
	once sync.Once
	ch   chan struct{} // closed at the first acknowledgement
}

func newListenAck() *listenAck { return &listenAck{ch: make(chan struct{})} }

func (a *listenAck) markSent() {
	if a != nil {
		a.sent.Store(true)
	}
}

func (a *listenAck) acked() {
	if a != nil {
		a.once.Do(func() { close(a.ch) })
	}
}

// listenBody is the response stream of a subscriptions/listen request.
type listenBody struct {
	io.ReadCloser
	ctx    context.Context
	broken func(error)
	ack    *listenAck
	tail   []byte // the end of the previous read, for a marker split across reads
	done   bool   // the completion result arrived
	once   sync.Once
}

var (
	resultMarker = []byte(`"result"`)
	ackMarker    = []byte(notificationListenAcked)
)

func (b *listenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.done && n > 0 {
		buf := append(b.tail, p[:n]...)
		b.done = bytes.Contains(buf, resultMarker)
		if bytes.Contains(buf, ackMarker) {
			b.ack.acked()
		}
		b.tail = append(b.tail[:0], buf[max(0, len(buf)-len(ackMarker)):]...)
	}
	if err != nil && b.ctx.Err() == nil {
		// The SDK never sends the request again, so after either end no
		// list change or resource update would arrive.
		how := "closed without its completion result"
		if b.done {
			how = "was ended by the server"
		}
		b.once.Do(func() { b.broken(fmt.Errorf("the %s stream %s: %w", methodSubscriptionsListen, how, err)) })
	}
	return n, err
}
