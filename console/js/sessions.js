// SPDX-License-Identifier: BSD-2-Clause
// console/js/sessions.js - the sessions the caller may see (GET
// /v1/sessions): an administrator's every one (or one principal's), anyone
// else's own. Each with who it is, what it holds and waits for, its lease,
// when the daemon last heard from it and whether it is connected. Read
// again, at most once a second, when the watch stream of all names says a
// permit or a waiter came or went.

import {all} from './api.js';
import {h, fill, table, count, duration, serverNow, ticking} from './dom.js';
import {Watch} from './live.js';
import {blocked, oneAtATime} from './ui.js';

/* The events after which the sessions' counts may have moved. */
const MOVES = new Set(['wait', 'grant', 'release', 'timeout', 'cancel', 'delete', 'replaced']);

// One session as a row of the table.
function row(x) {
	return h('tr', {'data-session': x.id},
		h('td', {class: 'mono'}, x.id),
		h('td', {'data-col': 'principal'},
			h('a', {href: `#/holds?principal=${encodeURIComponent(x.principal)}`}, x.principal)),
		h('td', {}, x.client || '—'),
		h('td', {}, x.host || '—'),
		h('td', {class: 'num'}, x.pid ? String(x.pid) : '—'),
		h('td', {class: 'num', 'data-col': 'holds'}, count(x.holds)),
		h('td', {class: 'num', 'data-col': 'waiters'}, count(x.waiters)),
		h('td', {class: 'num'}, x.lease_ms ? duration(x.lease_ms) : 'none'),
		h('td', {class: 'num', 'data-since': x.heard_ms}, duration(serverNow() - x.heard_ms)),
		h('td', {}, x.connected ? 'connected' : 'away'));
}

export function mount(main, params) {
	const principal = params.get('principal') || '';
	const state = h('p', {class: 'note', id: 'sessions-state', 'aria-live': 'polite'}, 'Reading…');
	const box = h('div', {id: 'sessions'});
	let loaded = false, later = 0;
	fill(main, h('h1', {tabindex: -1}, principal ? `Sessions of ${principal}` : 'Sessions'), state, box);

	const reload = oneAtATime(async () => {
		try {
			const items = await all('/sessions', principal ? {principal, limit: 1000} : {limit: 1000}, 5000);
			fill(box, items.length ? table('Sessions', ['Session', 'Principal', 'Client', 'Host',
				{text: 'PID', class: 'num'}, {text: 'Holds', class: 'num'}, {text: 'Waiting', class: 'num'},
				{text: 'Lease', class: 'num'}, {text: 'Heard from', class: 'num'}, 'Connection'],
			h('tbody', {}, items.map(row))) : h('p', {class: 'note'}, 'No session.'));
			fill(state, `${count(items.length)} sessions. A permit taken over HTTP is a hold of its ` +
				'principal (detached), not of a session: see Holds.');
			main.dataset.loaded = String(Date.now());
		} catch (e) {
			fill(state, '');
			fill(box, blocked(e));
			main.dataset.loaded = 'error';
		} finally {
			loaded = true;
		}
	});

	// Read again once a second at most while events come.
	function soon() {
		if (!later)
			later = setTimeout(() => {
				later = 0;
				reload();
			}, 1000);
	}

	// A fresh stream (or the first) reads the sessions; a refusal shows why.
	const watch = new Watch({name: '', prefix: true}, {
		ready: fresh => (fresh || !loaded) && reload(),
		event: ev => MOVES.has(ev.kind) && soon(),
		denied: () => reload(),
	});
	const tick = ticking(main);
	return {
		unmount() {
			clearTimeout(later);
			clearInterval(tick);
			watch.close();
		},
	};
}
