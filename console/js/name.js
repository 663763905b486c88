// SPDX-License-Identifier: BSD-2-Clause
// console/js/name.js - one semaphore: its figures, its holders (principal,
// client, host, pid, token, held for, lease left) and its queue in order
// (each waiter's priority, replace key, waited for), a picture of its
// permits and its line that moves as permits change hands, histograms of
// its waits and holds (the daemon's, and what the page saw), and the actions on it (set the limit, delete,
// force-release a hold, cancel a waiter), each after a confirmation. Read
// again (one request at a time) whenever the watch stream of the name says
// something happened: no polling.

import {api, seg} from './api.js';
import {h, fill, table, count, duration, when, serverNow, ticking} from './dom.js';
import {Watch} from './live.js';
import {act, alert, blocked, oneAtATime} from './ui.js';
import {emptyHist, histAdd, histogram} from './chart.js';

const PAGE = 100;		/* holders and waiters read at first */
const PAGE_ALL = 1000;		/* ... and when asked for all (the API's most) */
const CHIPS = 48;		/* waiters drawn in the picture, at most */
const SLOTS = 64;		/* free permits drawn, at most */

// Who a holder or waiter is, short: its client or principal.
function who(x) {
	return x.client || x.principal || '?';
}

// A key that matches a waiter with the events about it.
function reqKey(x) {
	return `${x.request}|${x.principal || ''}|${x.client || ''}|${x.pid || 0}`;
}

// What the page saw of each name while its view was open: its waits and
// holds, kept while the page lives (a view opened again goes on counting).
const seenOf = new Map();

export function mount(main, params) {
	const name = params.name;
	if (!seenOf.has(name))
		seenOf.set(name, {wait: emptyHist(), hold: emptyHist()});
	const hists = seenOf.get(name);
	const waitSince = new Map();	/* reqKey -> since_ms (from wait events) */
	const holdSince = new Map();	/* permit -> since_ms (from grant events) */
	const chips = new Map();	/* picture key -> element */
	let info = null, max = PAGE, gone = false;
	let stats = null, statsAt = -Infinity, statsTimer = 0, drawnHolders = new Set(), drawnWaiters = new Set();

	const title = h('h1', {tabindex: -1}, name);
	const state = h('p', {class: 'note', id: 'name-state', 'aria-live': 'polite'}, 'Reading…');
	const facts = h('dl', {class: 'facts', id: 'facts'});
	const slots = h('ul', {class: 'slots', 'aria-label': 'permits'});
	const line = h('ol', {class: 'line', 'aria-label': 'queue'});
	const picture = h('div', {class: 'picture', id: 'picture', role: 'img',
		'aria-label': 'permits and queue'}, slots, h('span', {class: 'arrow', 'aria-hidden': 'true'}, '⟵'), line);
	const holdersBox = h('div', {id: 'holders'});
	const queueBox = h('div', {id: 'queue'});
	const charts = h('div', {class: 'charts', id: 'charts'});
	const limitInput = h('input', {type: 'number', id: 'new-limit', min: 1, max: 1073741824, required: true});
	const actions = h('div', {class: 'actions', id: 'actions'},
		h('form', {class: 'inline', onsubmit: e => {
			e.preventDefault();
			setLimit(Number(limitInput.value));
		}},
		h('label', {for: 'new-limit'}, 'New limit', limitInput),
		h('button', {type: 'submit', id: 'set-limit'}, 'Set limit…'),
		h('button', {type: 'button', class: 'danger', id: 'delete', onclick: () => del()}, 'Delete…')));
	fill(main, h('p', {class: 'note'}, h('a', {href: '#/'}, 'Semaphores'), ' › ', name),
		title, state, facts, picture, actions,
		h('h2', {}, 'Holders'), holdersBox,
		h('h2', {}, 'Queue'), queueBox,
		h('h2', {}, 'Times'), charts);

	// --- actions ----------------------------------------------------------

	function setLimit(limit) {
		if (!Number.isInteger(limit) || limit < 1)
			return alert('The limit is a whole number of at least 1.', {key: 'action'});
		const now = info ? info.limit : '?';
		act({title: 'Set the limit',
			text: `Set the limit of ${name} from ${now} to ${limit}? ` +
				(info && limit < info.limit - info.available ?
					'It is less than the permits in use: no holder loses its permit, the name stays over its limit until enough are given back.' :
					'Waiters that fit are granted at once.'),
			ok: 'Set the limit'},
		() => api('PUT', `/semaphores/${seg(name)}/limit`, {body: {limit}}),
		`The limit of ${name} is ${limit}.`);
	}

	function del() {
		const force = h('input', {type: 'checkbox', id: 'force-delete'});
		act({title: 'Delete the name',
			text: `Delete ${name}? Without force the daemon refuses while anyone holds or waits.`,
			extra: h('label', {class: 'check', for: 'force-delete'}, force,
				' force: cancel its waiters and drop its holders'),
			ok: 'Delete'},
		() => api('DELETE', `/semaphores/${seg(name)}`, {query: {force: force.checked ? 'true' : undefined}}),
		`${name} is deleted.`);
	}

	function release(x) {
		act({title: 'Force-release a hold',
			text: `Take permit ${x.permit} (${x.n} of ${name}, token ${x.token}) away from ` +
				`${x.principal}${x.client ? `, ${x.client}` : ''}${x.host ? ` on ${x.host}` : ''}` +
				`${x.pid ? `, pid ${x.pid}` : ''}? The holder is told it lost it; its token stops being valid.`,
			ok: 'Force-release'},
		() => api('DELETE', `/semaphores/${seg(name)}/permits/${seg(x.permit)}`, {query: {force: 'true'}}),
		`Permit ${x.permit} of ${name} is released.`);
	}

	function cancel(w, pos) {
		act({title: 'Cancel a waiter',
			text: `Cancel the waiter ${pos} in line for ${name} (${w.principal}` +
				`${w.client ? `, ${w.client}` : ''}${w.pid ? `, pid ${w.pid}` : ''}, wants ${w.n})? ` +
				'Its down is answered cancelled.',
			ok: 'Cancel the waiter'},
		() => api('DELETE', `/semaphores/${seg(name)}/waiters/${seg(w.seq)}`),
		`The waiter is cancelled.`);
	}

	// --- drawing ----------------------------------------------------------

	function fact(label, value, id, wide) {
		return h('div', {'data-fact': id, class: wide ? 'wide' : undefined}, h('dt', {}, label), h('dd', {}, value));
	}

	function drawFacts(x) {
		const owned = x.mode === 'owned';
		const use = owned ? x.limit - x.available : null;
		fill(facts,
			fact('Mode', x.mode, 'mode'),
			fact('Limit', count(x.limit), 'limit'),
			owned ? fact('In use', count(use), 'in-use') : fact('Available', count(x.available), 'available'),
			fact('Holders', count(x.holders_total), 'holders'),
			fact('Waiting', count(x.waiters_total), 'waiting'),
			owned && x.available < 0 ? fact('Over limit', h('span', {class: 'badge over'},
				`by ${count(-x.available)}`), 'over') : null,
			x.rate ? fact('Rate', `${count(x.rate)} / ${duration(x.rate_period_ms || 1000)}` +
				(x.burst ? `, burst ${count(x.burst)}` : ''), 'rate') : null,
			x.rate ? fact('Tokens now', x.tokens !== undefined ? x.tokens.toFixed(2) : '—', 'tokens') : null,
			x.max_waiters ? fact('Queue bound', count(x.max_waiters), 'max-waiters') : null,
			x.share && x.share !== 'none' ? fact('Fair share', x.share, 'share') : null,
			fact('Last token', h('span', {class: 'mono'}, x.last_token || '—'), 'last-token', true),
			x.auto_created ? fact('Created', 'by a down', 'auto') : null);
		limitInput.placeholder = String(x.limit);
	}

	// A chip of the picture, the same element for the same key.
	function chip(key, cls, label, tip) {
		let el = chips.get(key);
		if (!el) {
			el = h('li', {class: 'chip enter'});
			chips.set(key, el);
		}
		el.className = `chip ${cls}${el.classList.contains('enter') ? ' enter' : ''}`;
		el.textContent = label;
		el.title = tip;
		el.dataset.key = key;
		return el;
	}

	// Draw the permits and the line; chips that stay slide to their new
	// places (a waiter granted slides into the permits).
	function drawPicture(x) {
		const before = new Map();
		for (const [k, el] of chips)
			if (el.isConnected)
				before.set(k, el.getBoundingClientRect());
		const keep = new Set();
		const held = [];
		for (const hd of x.holders) {
			const k = `p${hd.permit}`;
			keep.add(k);
			held.push(chip(k, 'held', hd.n > 1 ? `${who(hd)} ×${hd.n}` : who(hd),
				`permit ${hd.permit}, token ${hd.token}, ${hd.principal}`));
		}
		if (x.holders_total > x.holders.length)
			held.push(h('li', {class: 'chip held more'}, `+${count(x.holders_total - x.holders.length)}`));
		if (x.mode === 'owned')
			for (let i = 0; i < Math.min(Math.max(0, x.available), SLOTS); i++) {
				keep.add(`f${i}`);
				held.push(chip(`f${i}`, 'free', 'free', 'a free permit'));
			}
		const waiting = [];
		x.waiters.slice(0, CHIPS).forEach((w, i) => {
			const k = `w${w.seq}`;
			keep.add(k);
			waiting.push(chip(k, 'waiting', `${i + 1}${w.n > 1 ? ` ×${w.n}` : ''}`,
				`${i + 1} in line: ${w.principal}${w.client ? `, ${w.client}` : ''}, wants ${w.n}`));
		});
		if (x.waiters_total > Math.min(x.waiters.length, CHIPS))
			waiting.push(h('li', {class: 'chip more'}, `+${count(x.waiters_total - Math.min(x.waiters.length, CHIPS))}`));
		slots.replaceChildren(...held);
		line.replaceChildren(...waiting);
		picture.setAttribute('aria-label', `${count(x.holders_total)} holders, ` +
			`${x.mode === 'owned' ? `${count(Math.max(0, x.available))} permits free, ` : ''}` +
			`${count(x.waiters_total)} waiting`);
		for (const k of [...chips.keys()])
			if (!keep.has(k))
				chips.delete(k);
		for (const [k, el] of chips) {
			const a = before.get(k);
			if (!a) {
				requestAnimationFrame(() => requestAnimationFrame(() => el.classList.remove('enter')));
				continue;
			}
			el.classList.remove('enter');
			const b = el.getBoundingClientRect();
			const dx = a.left - b.left, dy = a.top - b.top;
			if (!dx && !dy)
				continue;
			el.style.transition = 'none';
			el.style.transform = `translate(${dx}px, ${dy}px)`;
			requestAnimationFrame(() => requestAnimationFrame(() => {
				el.style.transition = '';
				el.style.transform = '';
			}));
		}
	}

	function drawHolders(x) {
		const seen = new Set();
		const body = h('tbody', {}, x.holders.map(hd => {
			seen.add(hd.permit);
			return h('tr', {'data-permit': hd.permit, class: drawnHolders.has(hd.permit) ? '' : 'enter'},
				h('td', {class: 'mono'}, hd.permit),
				h('td', {class: 'mono', 'data-col': 'token'}, hd.token),
				h('td', {class: 'num'}, count(hd.n)),
				h('td', {'data-col': 'principal'}, hd.principal),
				h('td', {}, hd.client || '—'),
				h('td', {}, hd.host || '—'),
				h('td', {class: 'num'}, hd.pid ? String(hd.pid) : '—'),
				h('td', {class: 'num', 'data-since': hd.since_ms, title: `granted ${when(hd.since_ms)}`},
					duration(serverNow() - hd.since_ms)),
				h('td', {class: 'num', 'data-until': hd.expires_ms || undefined,
					title: hd.expires_ms ? `until ${when(hd.expires_ms)}` : undefined},
					hd.expires_ms ? duration(hd.expires_ms - serverNow()) :
						h('span', {class: 'badge detached', title: 'held by a live session'}, 'session')),
				h('td', {}, h('button', {type: 'button', class: 'small danger',
					'aria-label': `Force-release permit ${hd.permit}`, onclick: () => release(hd)},
				'Release…')));
		}));
		drawnHolders = seen;
		fill(holdersBox, x.holders.length ? table(`Holders of ${name}`, ['Permit', 'Token',
			{text: 'n', class: 'num'}, 'Principal', 'Client', 'Host', {text: 'PID', class: 'num'},
			{text: 'Held for', class: 'num'}, {text: 'Lease left', class: 'num'}, 'Action'], body) :
			h('p', {class: 'note'}, 'Nobody holds it.'),
		x.holders_total > x.holders.length ? more(x.holders.length, x.holders_total, 'holders') : null);
	}

	function drawQueue(x) {
		const seen = new Set();
		const body = h('tbody', {}, x.waiters.map((w, i) => {
			seen.add(w.seq);
			return h('tr', {'data-seq': w.seq, class: drawnWaiters.has(w.seq) ? '' : 'enter'},
				h('td', {class: 'num'}, String(i + 1)),
				h('td', {'data-col': 'principal'}, w.principal),
				h('td', {}, w.client || '—'),
				h('td', {}, w.host || '—'),
				h('td', {class: 'num'}, w.pid ? String(w.pid) : '—'),
				h('td', {class: 'num'}, count(w.n)),
				h('td', {class: 'num'}, String(w.priority || 0)),
				h('td', {}, w.group || '—'),
				h('td', {class: 'mono'}, w.replace || '—'),
				h('td', {class: 'num', 'data-since': w.since_ms, title: `queued ${when(w.since_ms)}`},
					duration(serverNow() - w.since_ms)),
				h('td', {class: 'num', 'data-until': w.deadline_ms || undefined},
					w.deadline_ms ? duration(w.deadline_ms - serverNow()) : 'none'),
				h('td', {}, w.detached ? h('span', {class: 'badge detached'}, 'away') : 'connected'),
				h('td', {}, h('button', {type: 'button', class: 'small danger',
					'aria-label': `Cancel waiter ${i + 1}`, onclick: () => cancel(w, i + 1)}, 'Cancel…')));
		}));
		drawnWaiters = seen;
		fill(queueBox, x.waiters.length ? table(`Queue of ${name}, first in line first`, [
			{text: '#', class: 'num'}, 'Principal', 'Client', 'Host', {text: 'PID', class: 'num'},
			{text: 'n', class: 'num'}, {text: 'Priority', class: 'num'}, 'Group', 'Replace key',
			{text: 'Waited for', class: 'num'}, {text: 'Deadline in', class: 'num'}, 'Session', 'Action'], body) :
			h('p', {class: 'note'}, 'Nobody waits.'),
		x.waiters_total > x.waiters.length ? more(x.waiters.length, x.waiters_total, 'waiters') : null);
	}

	// "The first N of M": a button reads up to the API's most.
	function more(shown, total, what) {
		return h('p', {class: 'pager'}, `The first ${count(shown)} of ${count(total)} ${what}.`,
			max < PAGE_ALL ? h('button', {type: 'button', class: 'small', onclick: () => {
				max = PAGE_ALL;
				reload();
			}}, `Show up to ${count(PAGE_ALL)}`) : null);
	}

	function drawCharts() {
		const all = stats && stats.histograms || {};
		const own = info && info.histograms;
		fill(charts,
			own ? histogram(`Waits for ${name} (since its first grant)`, own.wait, 'wait',
				['wait counted', 'waits counted']) : null,
			own ? histogram(`Holds of ${name} (since its first grant)`, own.hold, 'hold',
				['hold counted', 'holds counted']) : null,
			histogram(`Waits for ${name}`, hists.wait, 'wait', ['wait seen', 'waits seen']),
			histogram(`Holds of ${name}`, hists.hold, 'hold', ['hold seen', 'holds seen']),
			stats ? histogram('Waits, all names (since the daemon started)', all.wait, 'wait', ['wait', 'waits']) : null,
			stats ? histogram('Holds, all names (since the daemon started)', all.hold, 'hold', ['hold', 'holds']) : null,
			h('p', {class: 'note'}, `The daemon counts every grant of ${name} and every hold of it ` +
				'that ended since its first grant (while the name lives); the pair after them count ' +
				'what this page saw happen while its view was open, timed by the daemon’s own clock.'));
	}

	// The daemon's own histograms, read at most every 5 s while events come.
	function readStats() {
		if (statsTimer)
			return;
		statsTimer = setTimeout(async () => {
			statsTimer = 0;
			statsAt = performance.now();
			try {
				stats = await api('GET', '/stats');
			} catch {
				stats = null;	/* not for this principal */
			}
			drawCharts();
		}, Math.max(0, 5000 - (performance.now() - statsAt)));
	}

	// --- reading ----------------------------------------------------------

	function draw(x) {
		info = x;
		for (const hd of x.holders)
			if (!holdSince.has(hd.permit))
				holdSince.set(hd.permit, hd.since_ms);
		drawFacts(x);
		drawPicture(x);
		drawHolders(x);
		drawQueue(x);
		drawCharts();
		fill(state, `${count(x.holders_total)} holding, ${count(x.waiters_total)} waiting.`);
		main.dataset.loaded = String(Date.now());
	}

	// Read the name again; one read at a time, one more if asked meanwhile.
	const reload = oneAtATime(async () => {
		try {
			draw(await api('GET', `/semaphores/${seg(name)}`, {query: {limit: max}}));
			gone = false;
		} catch (e) {
			info = null;
			gone = e.status === 404;
			fill(state, gone ? `${name} does not exist (now).` : '');
			for (const el of [facts, slots, line])
				fill(el);
			fill(holdersBox, gone ? null : blocked(e));
			fill(queueBox);
			main.dataset.loaded = 'error';
		}
	});

	// What an event tells the histograms (times are the daemon's).
	function account(ev) {
		if (ev.kind === 'wait')
			waitSince.set(reqKey(ev), ev.time_ms);
		else if (ev.kind === 'grant') {
			const k = reqKey(ev);
			let since = waitSince.get(k);
			const ws = info ? info.waiters.filter(w => String(w.request) === String(ev.request) &&
				(!ev.principal || w.principal === ev.principal) && (!ev.pid || w.pid === ev.pid)) : [];
			if (since === undefined && ws.length === 1)
				since = ws[0].since_ms;
			if (since === undefined && info && info.waiters_total === info.waiters.length)
				since = ev.time_ms;	/* granted at once: waited 0 */
			if (since !== undefined)
				histAdd(hists.wait, ev.time_ms - since);
			waitSince.delete(k);
			if (ev.permit) {
				holdSince.set(ev.permit, ev.time_ms);
				/* the waiter's chip becomes the holder's: it slides over */
				if (ws.length === 1 && chips.has(`w${ws[0].seq}`)) {
					chips.set(`p${ev.permit}`, chips.get(`w${ws[0].seq}`));
					chips.delete(`w${ws[0].seq}`);
				}
			}
		} else if (ev.kind === 'release' && ev.permit) {
			const since = holdSince.get(ev.permit);
			if (since !== undefined)
				histAdd(hists.hold, ev.time_ms - since);
			holdSince.delete(ev.permit);
		} else if (ev.kind === 'timeout' || ev.kind === 'cancel' || ev.kind === 'replaced') {
			waitSince.delete(reqKey(ev));
		}
	}

	const watch = new Watch({name, prefix: false}, {
		ready: fresh => {
			if (fresh || !info)
				reload();
			readStats();
		},
		event: ev => {
			account(ev);
			if (ev.kind === 'delete')
				fill(state, `${name} was deleted.`);
			reload();
			readStats();
		},
		denied: p => {
			fill(state, `Not live: ${p.detail || 'your principal may not watch this name'}.`);
			reload();
		},
	});
	/* held for, waited for, lease left: our clock moves them on */
	const tick = ticking(main);
	const late = setTimeout(() => {
		if (!info && !reload.busy() && !gone)
			reload();
	}, 2000);
	drawCharts();
	return {
		unmount() {
			watch.close();
			clearInterval(tick);
			clearTimeout(late);
			clearTimeout(statsTimer);
		},
	};
}
