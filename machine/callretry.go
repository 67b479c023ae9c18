package machine

import "time"

// DLCallRetry sends again, after callRetryDelay, a ledger call whose continuation stayed in
// Pending: a cleanup the ledger could not confirm (a cancel refused as unavailable, an
// execute of a dropped action that may have run: contExecuteAsk). While it waits the desk still
// owns what the call is about, and a restart issues it at once like any pending call.
const DLCallRetry DeadlineKind = "call.retry"

// callRetryDelay spaces the retries of such a call.
const callRetryDelay = 2 * time.Second

// retryableCleanup reports whether a cleanup call that failed this way may still have work
// to do: the ledger did not refuse the command itself, it could not (or did not say
// whether it did) run it.
func retryableCleanup(f *LedgerFailure) bool {
	if f == nil {
		return false
	}
	switch f.Category {
	case LedgerUnavailable, LedgerInternal, LedgerContention, LedgerUnknownOutcome, LedgerRejected:
		return true
	}
	return false
}

// retryCallLater keeps a call's continuation pending and sends the call again later.
func (a *applier) retryCallLater(cont *Continuation) {
	a.d.Pending[cont.Call.CommandID] = cont
	a.at(a.d.Now.Add(callRetryDelay), DLCallRetry, cont.Call.CommandID)
}

// callRetry sends a pending call again (a no-op once its answer came).
func (a *applier) callRetry(commandID string) {
	cont, ok := a.d.Pending[commandID]
	if !ok || a.quiet || cont.Deferred {
		return
	}
	a.emitCall(cont.Call)
}

// askBeforeLeaving sends at once the execute of an executing action about to leave the
// queue whose outcome was unknown and whose retry is still due (no execute in flight): the
// ledger answers an execute that ran with its update, and the desk then releases what it
// made (executed, lateExecution). Without it an allocation that landed unheard stays on
// the ledger for good.
func (a *applier) askBeforeLeaving(x *Action) {
	if x.State != ActionExecuting || x.Execute == nil {
		return
	}
	if _, inFlight := a.d.Pending[execCommandID(x)]; inFlight {
		return
	}
	a.sendExecute(x, &Continuation{Kind: contExecuteAsk, Entity: x.ID})
}
