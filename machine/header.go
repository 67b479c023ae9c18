package machine

// header is the request header of the command that embeds r: every command embeds a Req,
// so this one method serves them all (Command_). Idempotent, which carries its command,
// answers with that command's header instead.
func (r Req) header() Req { return r }
