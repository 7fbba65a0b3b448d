package transport

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

type fakeRT []*http.Response

func (f *fakeRT) RoundTrip(*http.Request) (*http.Response, error) {
	r := (*f)[0]
	*f = (*f)[1:]
	return r, nil
}

func httpAnswer(code int, retryAfter, body string) *http.Response {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

// TestResponseRecorder: the last error answer to a POST is kept with its
// body, still readable by the SDK, and forgotten at the next success;
// other methods' answers are ignored.
func TestResponseRecorder(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rt := fakeRT{
		httpAnswer(503, "Mon, 30 Nov 2026 12:00:30 GMT", "busy\n"),
		httpAnswer(405, "", "no stream"),
		httpAnswer(200, "", "{}"),
		httpAnswer(429, "soon", strings.Repeat("z", 3*MaxCauseBytes)),
	}
	r := &responseRecorder{base: &rt, now: func() time.Time { return now }}
	post, _ := http.NewRequest(http.MethodPost, "http://h/mcp", nil)
	get, _ := http.NewRequest(http.MethodGet, "http://h/mcp", nil)

	resp, _ := r.RoundTrip(post)
	if body, _ := io.ReadAll(resp.Body); string(body) != "busy\n" {
		t.Errorf("the SDK reads %q, want the whole body", body)
	}
	he := r.answer()
	if he == nil || he.StatusCode != 503 || he.Body != "busy" || he.RetryAfter != 30*time.Second {
		t.Fatalf("after a 503: %#v", he)
	}
	_, _ = r.RoundTrip(get)
	if r.answer() != he {
		t.Errorf("a GET's 405 replaced the POST's answer: %v", r.answer())
	}
	_, _ = r.RoundTrip(post)
	if r.answer() != nil {
		t.Errorf("after a successful POST: %v, want nil", r.answer())
	}
	_, _ = r.RoundTrip(post)
	he = r.answer()
	if he == nil || len(he.Body) != MaxCauseBytes || he.RetryAfter != 0 {
		t.Errorf("a 429 with a bad Retry-After and a long body: %d bytes, retry after %v", len(he.Body), he.RetryAfter)
	}
}
