package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/toolsearch"
)

// searchTools prints the tools that best match query, at most limit,
// best first, with their scores: the ranking of serve's search tool.
func searchTools(w io.Writer, tools []conn.Tool, query string, limit int) error {
	docs := make([]toolsearch.Doc, 0, len(tools))
	byName := map[string]conn.Tool{}
	for _, t := range tools {
		docs = append(docs, toolsearch.DocOf(t.Server, t.Name, t.Raw))
		byName[t.Name] = t
	}
	ix, err := toolsearch.New(docs)
	if err != nil {
		return err
	}
	defer ix.Close()
	hits, err := ix.Search(query, "", limit)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tSCORE\tDESCRIPTION")
	for _, h := range hits {
		desc := ""
		if t := byName[h.Name]; t.Raw != nil {
			desc, _, _ = strings.Cut(strings.TrimSpace(t.Raw.Description), "\n")
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\n", h.Name, h.Server, h.Score, strings.TrimSpace(desc))
	}
	return tw.Flush()
}
