package tree_test

import (
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/internal/tree"
)

// shape is a Value without its document text, to compare.
type shape struct {
	Kind    string
	Text    string        `json:",omitempty"`
	Elems   []shape       `json:",omitempty"`
	Members []memberShape `json:",omitempty"`
}

type memberShape struct {
	Key      string
	Value    shape
	Repeated bool
}

func shapeOf(v tree.Value) shape {
	s := shape{Kind: v.Kind.String(), Text: v.Text}
	for _, e := range v.Elems {
		s.Elems = append(s.Elems, shapeOf(e))
	}
	for _, m := range v.Members {
		s.Members = append(s.Members, memberShape{m.Key, shapeOf(m.Value), m.Repeated})
	}
	return s
}

// Members keep document order and every repeated key, marked; numbers
// keep their text; every value keeps its own JSON text.
func TestParseJSONKeepsOrderRepeatsAndText(t *testing.T) {
	doc := `{"b": [1e400, -0.50, "x\u00e9"], "a": {"k": true}, "b": null, "": false}`
	v, err := tree.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := shape{Kind: "object", Members: []memberShape{
		{"b", shape{Kind: "array", Elems: []shape{{Kind: "number", Text: "1e400"}, {Kind: "number", Text: "-0.50"}, {Kind: "string", Text: "xé"}}}, false},
		{"a", shape{Kind: "object", Members: []memberShape{{"k", shape{Kind: "boolean", Text: "true"}, false}}}, false},
		{"b", shape{Kind: "null"}, true},
		{"", shape{Kind: "boolean", Text: "false"}, false},
	}}
	if diff := cmp.Diff(want, shapeOf(v)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	for i, text := range []string{`[1e400, -0.50, "x\u00e9"]`, `{"k": true}`, `null`, `false`} {
		if got := string(v.Members[i].Value.JSON()); got != text {
			t.Errorf("member %d JSON = %q, want %q", i, got, text)
		}
	}
	if got := string(v.Members[0].Value.Elems[1].JSON()); got != "-0.50" {
		t.Errorf("element JSON = %q", got)
	}
	if got, ok := v.Lookup("b"); !ok || got.Kind != tree.Array {
		t.Errorf("Lookup(b) = %v, %v: want the first b", got.Kind, ok)
	}
}

func TestParseJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		in    string
		check func(error) bool
	}{
		{"", func(err error) bool { return errors.Is(err, tree.ErrEmpty) }},
		{" \n\t", func(err error) bool { return errors.Is(err, tree.ErrEmpty) }},
		{`{"a": 1}  x`, func(err error) bool {
			var te *tree.TrailingError
			return errors.As(err, &te) && te.Offset == 10
		}},
		{`null 1`, func(err error) bool {
			var te *tree.TrailingError
			return errors.As(err, &te) && te.Offset == 5
		}},
		{`{"a": 1,, }`, func(err error) bool {
			var se *json.SyntaxError
			return errors.As(err, &se) && se.Offset == 9
		}},
		{`{"a": `, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
	} {
		if _, err := tree.ParseJSON([]byte(tc.in)); !tc.check(err) {
			t.Errorf("ParseJSON(%q) = %v", tc.in, err)
		}
	}
}

// A converted value (no document) encodes itself, members in order.
func TestJSONOfAConvertedValue(t *testing.T) {
	v := tree.Value{Kind: tree.Object, Members: []tree.Member{
		{Key: "z", Value: tree.Value{Kind: tree.Number, Text: "3"}},
		{Key: `q"`, Value: tree.Value{Kind: tree.Array, Elems: []tree.Value{{Kind: tree.String, Text: "a\nb"}, {Kind: tree.Boolean, Text: "true"}, {Kind: tree.Null}}}},
	}}
	if got, want := string(v.JSON()), `{"z":3,"q\"":["a\nb",true,null]}`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

func TestPathQuotesWhatIsNotPlain(t *testing.T) {
	for _, tc := range []struct{ path, key, want string }{
		{"", "servers", "servers"},
		{"servers", "fs-1_x", "servers.fs-1_x"},
		{"servers", "a.b", `servers."a.b"`},
		{"servers", "", `servers.""`},
		{"servers", "é", `servers."é"`},
	} {
		if got := tree.Path(tc.path, tc.key); got != tc.want {
			t.Errorf("Path(%q, %q) = %s, want %s", tc.path, tc.key, got, tc.want)
		}
	}
	if got := tree.Index("args", 2); got != "args[2]" {
		t.Errorf("Index = %s", got)
	}
	if got := tree.Object.Article() + ", " + tree.Null.Article() + ", " + tree.String.Article(); got != "an object, null, a string" {
		t.Errorf("articles: %s", got)
	}
}
