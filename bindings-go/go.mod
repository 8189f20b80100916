module github.com/leasehold/leasehold-go

go 1.24
