// SPDX-License-Identifier: BSD-2-Clause
// console/js/live.js - the daemon's watch stream (GET /v1/watch, Server-Sent
// Events) kept open for a view: resumed after a cut from the revision after
// the last event read (Last-Event-ID), so that nothing is lost or repeated,
// across a daemon restart and a leader change; started afresh (the view
// reads its state again) when the daemon no longer has what was missed.
//
// The browser's own EventSource carries the stream when the page has no
// bearer token (its credentials are the browser's: a client certificate, or
// none); with a token, a reader over fetch does, since EventSource cannot
// send an Authorization header. Both resume with Last-Event-ID.

import {getToken, headers, url, whoami} from './api.js';
import {sawServerTime} from './dom.js';

const KINDS = ['create', 'wait', 'grant', 'release', 'timeout', 'cancel', 'limit',
	'rate', 'queue', 'replaced', 'deadlock', 'delete'];
const BACKOFF_MS = [250, 500, 1000, 2000, 4000, 8000];

// The page's state of liveness, shown in the header (one stream at a time).
const listeners = new Set();
let liveState = {state: 'idle', text: 'not live yet', rev: ''};
export function onLiveState(fn) {
	listeners.add(fn);
	fn(liveState);
}
// Say a state (text: what a screen reader is told, once a change) and the
// revision the page is at (shown only).
function setLive(state, text, rev = '') {
	liveState = {state, text, rev: String(rev)};
	for (const fn of listeners)
		fn(liveState);
}

// Say the revision the page is at, once a frame however many events come.
let shownRev = 0n, revFrame = 0;
function showRevision(r) {
	shownRev = r;
	if (!revFrame)
		revFrame = requestAnimationFrame(() => {
			revFrame = 0;
			if (liveState.state === 'live')
				setLive('live', 'live', shownRev);
		});
}

// A revision (a decimal string) as a BigInt; 0n for none.
function rev(s) {
	try {
		return s ? BigInt(s) : 0n;
	} catch {
		return 0n;
	}
}

export class Watch {
	// what: {name, prefix}; on: {ready(fresh), event(ev), denied(problem)}.
	constructor(what, on) {
		this.what = what;
		this.on = on;
		this.last = 0n;		// the last event's revision handed on
		this.closed = false;
		this.tries = 0;
		this.es = null;
		this.ctl = null;
		this.timer = 0;
		this.started = false;	// a ready came since the view began
		this.start(false);
	}

	close() {
		this.closed = true;
		clearTimeout(this.timer);
		if (this.es)
			this.es.close();
		if (this.ctl)
			this.ctl.abort();
		this.es = this.ctl = null;
	}

	// The stream's URL: resume names the last revision read (whether the
	// daemon starts after it or at it, an event read twice is dropped).
	url(resume) {
		const q = {name: this.what.name || '', prefix: this.what.prefix ? 'true' : undefined};
		if (resume && this.last > 0n)
			q.from = String(this.last);
		return url('/watch', q);
	}

	start(resume) {
		if (this.closed)
			return;
		if (getToken())
			this.runFetch(resume);
		else
			this.runEventSource(resume);
	}

	// Try again after a pause that grows with the failures in a row; ask the
	// daemon first who leads (the base may move to another node).
	retry(resume, why) {
		if (this.closed)
			return;
		const ms = BACKOFF_MS[Math.min(this.tries++, BACKOFF_MS.length - 1)];
		setLive('reconnecting', why || 'reconnecting…');
		this.timer = setTimeout(async () => {
			try {
				await whoami();
			} catch {
				/* the node itself is down: the stream's try will say */
			}
			this.start(resume);
		}, ms);
	}

	// The stream's first event: the revision so far. fresh: what the view
	// holds cannot be brought up to date by the events to come.
	ready(revision, fresh) {
		performance.mark('stream-ready');
		this.tries = 0;
		const r = rev(revision);
		if (!this.started || r < this.last)
			fresh = true;		/* first, or the daemon's history began again */
		this.started = true;
		if (fresh)
			this.last = r;
		setLive('live', 'live', this.last);
		this.on.ready(fresh);
	}

	// An event: handed on once, in order of revision.
	event(kind, data, id) {
		let ev;
		try {
			ev = JSON.parse(data);
		} catch {
			return;
		}
		ev.kind = ev.kind || kind;
		const r = rev(ev.revision || id);
		if (r !== 0n && r <= this.last)
			return;
		if (r !== 0n) {
			this.last = r;
			showRevision(r);
		}
		sawServerTime(ev.time_ms);
		this.on.event(ev);
	}

	// The history no longer holds what was missed: start from the state.
	compacted() {
		this.on.ready(true);
	}

	// --- EventSource ------------------------------------------------------

	runEventSource(resume) {
		const es = new EventSource(this.url(resume));
		this.es = es;
		es.addEventListener('ready', e => {
			let fresh = !resume;
			try {
				const d = JSON.parse(e.data || '{}');
				this.ready(d.revision || e.lastEventId, fresh);
			} catch {
				this.ready(e.lastEventId, fresh);
			}
			resume = true;	/* its own reconnects resume (Last-Event-ID) */
			fresh = false;
		});
		es.addEventListener('compacted', () => this.compacted());
		for (const k of KINDS)
			es.addEventListener(k, e => this.event(k, e.data, e.lastEventId));
		es.addEventListener('message', e => this.event('', e.data, e.lastEventId));
		es.onerror = () => {
			if (this.closed || this.es !== es)
				return;
			if (es.readyState === EventSource.CONNECTING) {
				setLive('reconnecting', 'reconnecting…');
				return;		/* the browser tries again by itself */
			}
			es.close();
			this.es = null;
			this.probe();
		};
	}

	// EventSource gave up (an answer that was not a stream): learn why with
	// a request of our own, then resume, start afresh, or stop if denied.
	async probe() {
		let status = 0, resume = this.last > 0n;
		try {
			await whoami();
		} catch {
			/* said by the request below */
		}
		for (;;) {
			const ctl = new AbortController();
			this.ctl = ctl;
			try {
				const r = await fetch(this.url(resume), {headers: headers({Accept: 'text/event-stream'}),
					signal: ctl.signal, cache: 'no-store'});
				status = r.status;
				const body = /json/.test(r.headers.get('Content-Type') || '') ? await r.json() : null;
				ctl.abort();
				if (this.closed)
					return;
				if (r.ok)
					return this.runEventSource(resume);
				if (status === 401 || status === 403)
					return this.deny(body);
				/* what was missed is not kept, or yet to come (a daemon
				   that began again): start afresh */
				if ((status === 400 || status === 410) && resume) {
					resume = false;
					continue;
				}
			} catch {
				/* the daemon is away: try again below */
			}
			break;
		}
		this.retry(resume, status ? `the stream was answered ${status}; trying again` : undefined);
	}

	deny(body) {
		setLive('denied', 'not allowed to watch');
		this.on.denied(body || {});
	}

	// --- fetch ------------------------------------------------------------

	async runFetch(resume) {
		const ctl = new AbortController();
		this.ctl = ctl;
		const hd = headers({Accept: 'text/event-stream'});
		if (resume && this.last > 0n)
			hd['Last-Event-ID'] = String(this.last);
		let r;
		try {
			r = await fetch(this.url(false), {headers: hd, signal: ctl.signal, cache: 'no-store'});
		} catch {
			return this.retry(resume);
		}
		if (this.closed)
			return;
		if (!r.ok) {
			const body = /json/.test(r.headers.get('Content-Type') || '') ?
				await r.json().catch(() => null) : null;
			if (r.status === 401 || r.status === 403)
				return this.deny(body);
			/* what was missed is not kept, or yet to come (a daemon
			   that began again): start afresh */
			if ((r.status === 400 || r.status === 410) && resume)
				return this.runFetch(false);
			return this.retry(resume, `the stream was answered ${r.status}; trying again`);
		}
		try {
			await this.read(r.body, !resume);
		} catch {
			/* cut: resumed below */
		}
		if (!this.closed)
			this.retry(true);
	}

	// Read an event stream (the WHATWG format): fields until a blank line.
	async read(body, fresh) {
		const reader = body.pipeThrough(new TextDecoderStream()).getReader();
		let buf = '', event = '', data = [], id = '';
		for (;;) {
			const {value, done} = await reader.read();
			if (done || this.closed)
				return;
			buf += value;
			let nl;
			while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
				const line = buf.slice(0, nl);
				buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
				if (line === '') {
					if (data.length > 0) {
						const d = data.join('\n');
						if (event === 'ready') {
							let r = id;
							try {
								r = JSON.parse(d).revision || id;
							} catch {
								/* the id says it */
							}
							this.ready(r, fresh);
							fresh = false;
						} else if (event === 'compacted') {
							this.compacted();
						} else {
							this.event(event, d, id);
						}
					}
					event = '';
					data = [];
					continue;
				}
				if (line.startsWith(':'))
					continue;
				const c = line.indexOf(':');
				const f = c < 0 ? line : line.slice(0, c);
				let v = c < 0 ? '' : line.slice(c + 1);
				if (v.startsWith(' '))
					v = v.slice(1);
				if (f === 'event')
					event = v;
				else if (f === 'data')
					data.push(v);
				else if (f === 'id' && !v.includes('\0'))
					id = v;
			}
		}
	}
}
