package bugs

var On bool
