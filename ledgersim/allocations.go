package ledgersim

type allocatePlan struct {
	spend
	cmd   Allocate
	owner string
	in    *Instrument
}

func (c *checker) allocate(a Allocate) (plan, error) {
	if !validID(a.Settlement.ID) || !validID(a.LegID) {
		return nil, newErr(CategoryInvalid, "", "settlement id and leg id must be 1..%d bytes", maxIDLen)
	}
	if err := c.party(a.Settlement.Executor, "executor"); err != nil {
		return nil, err
	}
	if a.Side != SideSend && a.Side != SideReceive {
		return nil, newErr(CategoryInvalid, "", "side must be send or receive")
	}
	in, err := c.instrument(a.Instrument)
	if err != nil {
		return nil, err
	}
	if err := checkAmount(in, a.Amount); err != nil {
		return nil, err
	}
	if a.SettleBefore.IsZero() {
		return nil, newErr(CategoryInvalid, "", "settleBefore is required")
	}
	if !a.AllocateBefore.IsZero() && a.AllocateBefore.After(a.SettleBefore) {
		return nil, newErr(CategoryInvalid, "", "allocateBefore is after settleBefore")
	}
	if !c.now.Before(a.SettleBefore) {
		return nil, newErr(CategoryExpired, "", "settleBefore %s has passed", a.SettleBefore.UTC().Format("2006-01-02T15:04:05.999Z07:00"))
	}
	if !a.AllocateBefore.IsZero() && !c.now.Before(a.AllocateBefore) {
		return nil, newErr(CategoryExpired, "", "allocateBefore %s has passed", a.AllocateBefore.UTC().Format("2006-01-02T15:04:05.999Z07:00"))
	}
	if cid, ok := c.st.allocLeg[legKey{a.Settlement, a.LegID}]; ok {
		return nil, newErr(CategoryAlreadyExists, "", "leg %q of settlement %q already has allocation %s", a.LegID, a.Settlement.ID, cid)
	}
	p := &c.st.plans.allocate // one plan at a time: reused (plans.go)
	*p = allocatePlan{cmd: a, owner: c.actAs, in: in}
	if a.Side == SideSend {
		p.holdings, p.sum, err = c.pick(c.actAs, a.Instrument, a.Amount, a.Inputs)
		if err != nil {
			return nil, err
		}
	} else if len(a.Inputs) > 0 {
		return nil, newErr(CategoryInvalid, "", "a receive allocation spends no input holdings")
	}
	return p, nil
}

// allocationBlock allocates an allocation contract in one piece.
type allocationBlock struct {
	c  contract
	al Allocation
}

func (p *allocatePlan) commit(t *tx) {
	a := p.cmd
	context, cid := t.st.newCIDAfter("allocation ") // the locked holding's lock context
	b := &allocationBlock{}
	b.al = Allocation{
		CID: cid, Settlement: a.Settlement, LegID: a.LegID, Owner: p.owner, Side: a.Side,
		Instrument: a.Instrument, Amount: a.Amount, AllocateBefore: a.AllocateBefore,
		SettleBefore: a.SettleBefore, CreatedOffset: t.off,
	}
	al := &b.al
	if a.Side == SideSend {
		al.Locked = t.newCID()
	}
	b.c = contract{kind: ContractAllocation, al: al}
	t.add(&b.c, cid)
	t.u.Allocation = cid
	if a.Side == SideSend {
		p.lock(t, al.Locked, p.owner, p.in, a.Amount, a.Settlement.Executor, a.SettleBefore, context)
	}
}

type releaseAllocationPlan struct {
	unlock
	al *Allocation
}

func (c *checker) releaseAllocation(cid string, ownerOnly bool) (plan, error) {
	k := c.st.contracts[cid]
	if k == nil || k.kind != ContractAllocation {
		return nil, c.missing("allocation", cid)
	}
	al := k.al
	if c.actAs != al.Owner && (ownerOnly || c.actAs != al.Settlement.Executor) {
		if ownerOnly {
			return nil, newErr(CategoryForbidden, "", "only the owner withdraws allocation %s", cid)
		}
		return nil, newErr(CategoryForbidden, "", "only the executor or the owner cancels allocation %s", cid)
	}
	return &releaseAllocationPlan{unlock: c.unlock(cid, al.Locked, "allocation "), al: al}, nil
}

func (p *releaseAllocationPlan) commit(t *tx) {
	cid := p.al.CID
	t.archive(cid)
	if p.stillLocked && !(plantedBuild && plantedOn("cancel-keeps-lock")) {
		t.release(p.al.Locked, "allocation ", cid)
	}
}
