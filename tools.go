//go:build tools

// Package tools pins the code generators that `pip install .` builds from this
// go.mod (gopy and goimports), so the bindings never depend on `go install @latest`.
package tools

import (
	_ "github.com/go-python/gopy"
	_ "golang.org/x/tools/cmd/goimports"
)
