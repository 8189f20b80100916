module github.com/leasehold/leasehold-go/fencing/pgtest

go 1.24

require github.com/leasehold/leasehold-go v0.0.0

require github.com/lib/pq v1.12.3

replace github.com/leasehold/leasehold-go => ../..
