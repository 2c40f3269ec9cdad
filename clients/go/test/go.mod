// Tests of the rlockd Go module with go-redis and redsync. clients/test.sh copies this
// folder into a scratch module outside the checkout, points the replace below at the
// checkout's clients/go (as a user's module would) and runs go test.
module rlockd.dev/rlockd/test

go 1.26.0

replace rlockd.dev/rlockd => ../

require (
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redis/go-redis/v9 v9.23.0
	rlockd.dev/rlockd v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
