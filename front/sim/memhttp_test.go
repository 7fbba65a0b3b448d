package sim

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// memTransport is an http.RoundTripper that serves each request with a
// handler in the same process, over pipes: no socket, so that every
// goroutine of a run stays inside its synctest bubble and a wait on the
// network is a wait on a channel.
type memTransport struct {
	h       http.Handler
	subject string // the caller every request names (the X-Sim-Subject header)
}

// subjectHeader names the caller of a simulated client's request.
const subjectHeader = "X-Sim-Subject"

func (t *memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	r = r.Clone(ctx)
	r.Header.Set(subjectHeader, t.subject)
	r.RemoteAddr = "127.0.0.1:1"
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &memWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK)
			_ = pw.Close()
		}()
		t.h.ServeHTTP(w, r)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		cancel()
		return nil, context.Cause(ctx)
	}
	return &http.Response{
		Status: http.StatusText(w.code), StatusCode: w.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: &memBody{pr: pr, close: func() { stop(); cancel() }}, Request: r,
		ContentLength: -1,
	}, nil
}

// memWriter is the handler's side of a memTransport response.
type memWriter struct {
	header http.Header
	pw     *io.PipeWriter

	once  sync.Once
	ready chan struct{} // closed once the status and header are sent
	code  int
	sent  http.Header
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *memWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush implements http.Flusher: every Write reaches the reader at once.
func (w *memWriter) Flush() {}

// memBody is a memTransport response's body: closing it ends the
// request's context, as a client that hangs up does.
type memBody struct {
	pr    *io.PipeReader
	close func()
}

func (b *memBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *memBody) Close() error {
	_ = b.pr.Close()
	b.close()
	return nil
}
