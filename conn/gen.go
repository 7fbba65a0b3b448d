package conn

// Regenerate the committed diagrams of the connection machine from Table.
//go:generate go run ../cmd/fsmdot -write ../diagrams
