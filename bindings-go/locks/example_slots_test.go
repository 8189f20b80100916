package locks_test

import (
	"context"
	"fmt"
	"time"

	"github.com/leasehold/leasehold-go/locks"
)

// A slot lease gives this process a node number for its ID generator; the
// next holder of the slot starts above what this one issued.
func ExampleStore_Slots() {
	ctx := context.Background()
	store := locks.Memory()
	defer store.Close()
	ids, err := store.Slots("order-ids", locks.Limit(2), locks.TTL(30*time.Second), locks.Offset(100))
	if err != nil {
		panic(err)
	}
	defer ids.Close()
	owner, _ := locks.NewOwner("order-service")
	lease, leased, err := ids.Acquire(ctx, owner, locks.Preferred(1))
	if err != nil || !leased {
		panic(fmt.Sprint("no slot: ", err))
	}
	fmt.Println("slot", lease.Slot(), "node", lease.Node())

	other, _ := locks.NewOwner("billing")
	_, leased, err = ids.Acquire(ctx, other)
	fmt.Println("billing leased:", leased, err)
	audit, _ := locks.NewOwner("audit")
	_, leased, err = ids.Acquire(ctx, audit) // every slot is held: an outcome, not an error
	fmt.Println("audit leased:", leased, err, locks.IsTimeout(err))

	lastIssued := lease.Floor() + 42
	released, err := ids.Release(ctx, lease, lastIssued)
	fmt.Println("released:", released, err)
	next, _, _ := ids.Acquire(ctx, owner)
	fmt.Println("next floor is what it issued:", next.Floor() == lastIssued)
	// Output:
	// slot 1 node 101
	// billing leased: true <nil>
	// audit leased: false <nil> false
	// released: true <nil>
	// next floor is what it issued: true
}

// A slot held while the work runs: renewed in the background, released at
// the end with the largest timestamp issued, which the slot's next holder
// starts above. The work's ctx ends with cause ErrLost if the slot is lost.
func ExampleSlots_Hold() {
	ctx := context.Background()
	store := locks.Memory()
	defer store.Close()
	ids, err := store.Slots("order-ids", locks.Limit(1), locks.TTL(30*time.Second), locks.Margin(3*time.Second))
	if err != nil {
		panic(err)
	}
	defer ids.Close()
	owner, _ := locks.NewOwner("order-service")
	var issued uint64
	ran, err := ids.Hold(ctx, owner, func(ctx context.Context, held *locks.HeldSlot) error {
		fmt.Println("node", held.Node())
		issued = held.Floor() + 1 // issue timestamps above Floor(), never past Ceiling()
		held.Issued(issued)
		return ctx.Err() // context.Cause(ctx) is ErrLost if the slot was lost
	})
	fmt.Println("ran:", ran, err)

	other, _ := locks.NewOwner("billing")
	next, _, _ := ids.Acquire(ctx, other)
	fmt.Println("the next floor is what it issued:", next.Floor() == issued)
	ran, err = ids.Hold(ctx, owner, func(context.Context, *locks.HeldSlot) error { return nil })
	fmt.Println("every slot held, ran:", ran, err)
	// Output:
	// node 0
	// ran: true <nil>
	// the next floor is what it issued: true
	// every slot held, ran: false <nil>
}
