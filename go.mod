module github.com/psda-dev/psda

go 1.24.0

require (
	github.com/go-python/gopy v0.4.10
	golang.org/x/tools v0.30.0
)

require (
	github.com/gonuts/commander v0.1.0 // indirect
	github.com/gonuts/flag v0.1.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/mod v0.23.0 // indirect
	golang.org/x/sync v0.12.0 // indirect
	gonum.org/v1/gonum v0.17.0
)
