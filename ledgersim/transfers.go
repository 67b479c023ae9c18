package ledgersim

type transferPlan struct {
	spend
	cmd    Transfer
	sender string
	in     *Instrument
}

// transfer checks a transfer through the instrument's transfer factory, with the
// profile's rules: on sandbox neither the faucet reservoir nor an external party may
// send (no faucet, no withdraw); on mainnet the reservoir may not send (no faucet); on
// testnet and mainnet the native coin reaches only a party with a preapproval.
func (c *checker) transfer(tr Transfer) (plan, error) {
	if c.actAs == tr.Receiver {
		return nil, newErr(CategoryInvalid, "", "a transfer to oneself")
	}
	in, err := c.delivery(tr.Receiver, tr.Instrument, tr.Amount)
	if err != nil {
		return nil, err
	}
	if len(tr.Reason) > maxIDLen {
		return nil, newErr(CategoryInvalid, "", "reason longer than %d bytes", maxIDLen)
	}
	prof := c.st.cfg.Profile
	if c.st.isReservoir(c.actAs) && !prof.FaucetEnabled() {
		return nil, newErr(CategoryNotSupported, "", "no faucet on %s", prof)
	}
	if c.st.parties[c.actAs].External && !prof.WithdrawEnabled() {
		return nil, newErr(CategoryNotSupported, "", "no transfers out on %s", prof)
	}
	if in.Native && prof.PreapprovalRequired() {
		if _, ok := c.st.preapprovals[tr.Receiver]; !ok {
			return nil, newErr(CategoryPreapprovalRequired, "", "%s has no transfer preapproval for %s", tr.Receiver, in.ID)
		}
	}
	if !tr.ExecuteBefore.IsZero() && !c.now.Before(tr.ExecuteBefore) {
		return nil, newErr(CategoryExpired, "", "executeBefore has passed")
	}
	p := &transferPlan{cmd: tr, sender: c.actAs, in: in}
	p.holdings, p.sum, err = c.pick(c.actAs, tr.Instrument, tr.Amount, tr.Inputs)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (p *transferPlan) commit(t *tx) {
	tr := p.cmd
	cid := t.newCID()
	b := &struct {
		c  contract
		ti TransferInstruction
	}{}
	b.ti = TransferInstruction{
		CID: cid, Sender: p.sender, Receiver: tr.Receiver, Instrument: tr.Instrument, Admin: p.in.Admin,
		Amount: tr.Amount, ExecuteBefore: tr.ExecuteBefore, Reason: tr.Reason, Locked: t.newCID(), CreatedOffset: t.off,
	}
	ti := &b.ti
	b.c = contract{kind: ContractTransferInstruction, ti: ti}
	t.add(&b.c, cid)
	t.u.TransferInstruction = cid
	p.lock(t, ti.Locked, p.sender, p.in, tr.Amount, p.in.Admin, tr.ExecuteBefore, "transfer "+cid)
}

type acceptPlan struct{ ti *TransferInstruction }

func (c *checker) instruction(cid string) (*TransferInstruction, error) {
	k := c.st.contracts[cid]
	if k == nil || k.kind != ContractTransferInstruction {
		return nil, c.missing("transfer instruction", cid)
	}
	return k.ti, nil
}

func (c *checker) acceptTransfer(a AcceptTransfer) (plan, error) {
	ti, err := c.instruction(a.Instruction)
	if err != nil {
		return nil, err
	}
	if c.actAs != ti.Receiver {
		return nil, newErr(CategoryForbidden, "", "only the receiver accepts transfer %s", ti.CID)
	}
	if !ti.ExecuteBefore.IsZero() && !c.now.Before(ti.ExecuteBefore) {
		return nil, newErr(CategoryExpired, "", "transfer %s expired", ti.CID)
	}
	if h := c.st.holding(ti.Locked); !lockedFor(h, "transfer ", ti.CID) {
		return nil, c.missing("locked holding of transfer", ti.CID)
	}
	return &acceptPlan{ti: ti}, nil
}

func (p *acceptPlan) inputs() []string { return []string{p.ti.CID, p.ti.Locked} }
func (p *acceptPlan) chosen() []string { return nil }

func (p *acceptPlan) commit(t *tx) {
	ti := p.ti
	in := t.st.instruments[ti.Instrument]
	t.archive(ti.CID)
	t.archive(ti.Locked)
	t.u.Receipts = append(t.u.Receipts, t.createHolding("", ti.Receiver, in, ti.Amount))
}

type endTransferPlan struct {
	unlock
	ti *TransferInstruction
}

func (c *checker) endTransfer(cid string, bySender bool) (plan, error) {
	ti, err := c.instruction(cid)
	if err != nil {
		return nil, err
	}
	if bySender && c.actAs != ti.Sender {
		return nil, newErr(CategoryForbidden, "", "only the sender withdraws transfer %s", cid)
	}
	if !bySender && c.actAs != ti.Receiver {
		return nil, newErr(CategoryForbidden, "", "only the receiver rejects transfer %s", cid)
	}
	return &endTransferPlan{unlock: c.unlock(cid, ti.Locked, "transfer "), ti: ti}, nil
}

func (p *endTransferPlan) commit(t *tx) {
	t.archive(p.ti.CID)
	if p.stillLocked {
		t.release(p.ti.Locked, "transfer ", p.ti.CID)
	}
}

type preapprovalPlan struct {
	receiver string
	provider string
	existing string
	noop     bool
}

// preapproval checks a CreatePreapproval: the acting party preapproves itself, or, when
// internal, acts as provider for any known receiver.
func (c *checker) preapproval(cp CreatePreapproval) (plan, error) {
	receiver := cp.Receiver
	if receiver == "" {
		receiver = c.actAs
	}
	if receiver != c.actAs {
		if c.st.parties[c.actAs].External {
			return nil, newErr(CategoryForbidden, "", "only an internal party creates a preapproval for another party")
		}
		if err := c.party(receiver, "receiver"); err != nil {
			return nil, err
		}
	}
	p := &preapprovalPlan{receiver: receiver, provider: c.actAs, noop: !c.st.cfg.Profile.PreapprovalRequired()}
	p.existing = c.st.preapprovals[receiver]
	return p, nil
}

func (p *preapprovalPlan) inputs() []string { return nil }
func (p *preapprovalPlan) chosen() []string { return nil }

func (p *preapprovalPlan) commit(t *tx) {
	switch {
	case p.noop:
	case p.existing != "":
		t.u.Preapproval = p.existing
	default:
		cid := t.newCID()
		t.add(&contract{kind: ContractPreapproval, pa: &Preapproval{CID: cid, Receiver: p.receiver, Provider: p.provider, CreatedOffset: t.off}}, cid)
		t.u.Preapproval = cid
	}
}
