module rlockd.dev/rlockd

go 1.21
