module example.invalid/leasehold/bindings-go

go 1.24
