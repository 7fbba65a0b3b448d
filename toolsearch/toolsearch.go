// Package toolsearch ranks MCP tools for a query in words, so that a host
// finds the tool it needs among hundreds without listing them all.
//
// An [Index] holds one set of tools ([Doc]s, made from tool definitions
// with [DocOf]) in a memory-only bleve index scored with BM25. A query is
// matched against the tools' names (split at underscores, dashes and case
// changes), descriptions, parameter names and descriptions, and server
// names, English words stemmed; a name weighs most. Results are
// deterministic: the same tools and the same query give the same hits in
// the same order, ties broken by name.
//
// An Index is immutable once built and safe for concurrent searches; a
// changed set of tools is a new Index. Close releases it.
package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Doc is one tool as the index knows it.
type Doc struct {
	// Name is the tool's name as the searcher knows it; it identifies the
	// Doc and breaks ties between equal scores.
	Name string
	// Server is the name of the server that serves the tool.
	Server string
	// Title and Description are the tool's own.
	Title, Description string
	// Params are the tool's parameters: the properties of its input
	// schema, in name order.
	Params []Param
}

// Param is one parameter of a tool.
type Param struct {
	Name, Description string
}

// DocOf is the Doc of t served as name by server: its parameters are the
// top-level properties of its input schema.
func DocOf(server, name string, t *mcp.Tool) Doc {
	d := Doc{Name: name, Server: server}
	if t == nil {
		return d
	}
	d.Title, d.Description = t.Title, t.Description
	if t.Annotations != nil && d.Title == "" {
		d.Title = t.Annotations.Title
	}
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if b, err := json.Marshal(t.InputSchema); err == nil {
		_ = json.Unmarshal(b, &schema) // a schema of another shape has no parameters to index
	}
	for p, s := range schema.Properties {
		d.Params = append(d.Params, Param{Name: p, Description: s.Description})
	}
	slices.SortFunc(d.Params, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
	return d
}

// Hit is one tool found.
type Hit struct {
	Name   string
	Server string
	Score  float64
}

// Index is a searchable set of tools. Build it with [New].
type Index struct {
	ix      bleve.Index
	servers map[string]string // name -> server
}

// Field weights: a word of the name counts most, then the title, then the
// description; parameters and the server's name help.
const (
	fieldName   = "name"
	fieldTitle  = "title"
	fieldDesc   = "description"
	fieldParams = "params"
	fieldServer = "server"     // words of the server's name
	fieldExact  = "server_key" // the server's name, for the filter
)

var boosts = map[string]float64{fieldName: 3, fieldTitle: 2, fieldDesc: 1, fieldParams: 0.5, fieldServer: 1}

// document is what bleve indexes of a Doc.
type document struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Params      string `json:"params"`
	Server      string `json:"server"`
	ServerKey   string `json:"server_key"`
}

func indexMapping() mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	m.DefaultAnalyzer = en.AnalyzerName
	doc := bleve.NewDocumentStaticMapping()
	for _, f := range []string{fieldName, fieldTitle, fieldDesc, fieldParams, fieldServer} {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = en.AnalyzerName
		fm.Store, fm.IncludeInAll, fm.IncludeTermVectors = false, false, false
		doc.AddFieldMappingsAt(f, fm)
	}
	km := bleve.NewKeywordFieldMapping()
	km.Analyzer = keyword.Name
	km.Store, km.IncludeInAll, km.IncludeTermVectors = false, false, false
	doc.AddFieldMappingsAt(fieldExact, km)
	m.DefaultMapping = doc
	return m
}

// New indexes docs. Two docs of one name are an error.
func New(docs []Doc) (*Index, error) {
	ix, err := bleve.NewUsing("", indexMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: %w", err)
	}
	out := &Index{ix: ix, servers: make(map[string]string, len(docs))}
	sorted := slices.Clone(docs)
	slices.SortFunc(sorted, func(a, b Doc) int { return strings.Compare(a.Name, b.Name) })
	batch := ix.NewBatch()
	for _, d := range sorted {
		if _, dup := out.servers[d.Name]; dup {
			_ = ix.Close()
			return nil, fmt.Errorf("toolsearch: two tools named %q", d.Name)
		}
		out.servers[d.Name] = d.Server
		if err := batch.Index(d.Name, d.document()); err != nil {
			_ = ix.Close()
			return nil, fmt.Errorf("toolsearch: tool %q: %w", d.Name, err)
		}
	}
	if err := ix.Batch(batch); err != nil {
		_ = ix.Close()
		return nil, fmt.Errorf("toolsearch: %w", err)
	}
	return out, nil
}

func (d Doc) document() document {
	var params strings.Builder
	for _, p := range d.Params {
		params.WriteString(Words(p.Name))
		params.WriteString(" ")
		params.WriteString(p.Description)
		params.WriteString(" ")
	}
	return document{Name: Words(d.Name), Title: d.Title, Description: d.Description, Params: params.String(),
		Server: Words(d.Server), ServerKey: d.Server}
}

// Len is how many tools the index holds.
func (x *Index) Len() int { return len(x.servers) }

// Close releases the index. Searching it afterwards is an error.
func (x *Index) Close() error { return x.ix.Close() }

// ErrEmptyQuery is returned for a query without a word to search.
var ErrEmptyQuery = errors.New("toolsearch: the query has no words")

// Search returns the tools that best match the words of q, at most limit
// (all matches when limit <= 0), best first, ties by name. With server
// set it returns only that server's tools.
func (x *Index) Search(q, server string, limit int) ([]Hit, error) {
	words := Words(q)
	if strings.TrimSpace(words) == "" {
		return nil, ErrEmptyQuery
	}
	fields := matches(words, 1)
	if more := expand(words); more != "" {
		fields = append(fields, matches(more, synonymWeight)...)
	}
	var qq query.Query = bleve.NewDisjunctionQuery(fields...)
	if server != "" {
		t := bleve.NewTermQuery(server)
		t.SetField(fieldExact)
		qq = bleve.NewConjunctionQuery(qq, t)
	}
	size := limit
	if size <= 0 {
		size = max(len(x.servers), 1)
	}
	req := bleve.NewSearchRequestOptions(qq, size, 0, false)
	req.SortBy([]string{"-_score", "_id"})
	res, err := x.ix.Search(req)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: %w", err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		hits = append(hits, Hit{Name: h.ID, Server: x.servers[h.ID], Score: h.Score})
	}
	return hits, nil
}

// synonymWeight is the weight of a query word's synonyms (see expand).
const synonymWeight = 0.5

// matches are the queries of words in each field, by the field's boost
// times weight.
func matches(words string, weight float64) []query.Query {
	var out []query.Query
	for _, f := range []string{fieldName, fieldTitle, fieldDesc, fieldParams, fieldServer} {
		m := bleve.NewMatchQuery(words)
		m.SetField(f)
		m.SetBoost(boosts[f] * weight)
		out = append(out, m)
	}
	return out
}

// Words is s with its identifiers split into words: read_text_file,
// read-text-file and readTextFile all become "read text file". Other
// text passes as it is.
func Words(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/':
			b.WriteRune(' ')
			continue
		case i > 0 && unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) ||
			(i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))):
			b.WriteRune(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}
