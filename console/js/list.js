// SPDX-License-Identifier: BSD-2-Clause
// console/js/list.js - the semaphores under a prefix, one row a name: limit,
// permits in use, holders, waiters, over the limit, rate; kept up to date by
// the watch stream of the prefix (each event carries the name's counts after
// it), no polling. Only the names the principal may inspect are listed: the
// daemon leaves the others out of the list and out of the stream.

import {api, all, seg} from './api.js';
import {h, fill, table, count} from './dom.js';
import {Watch} from './live.js';
import {blocked} from './ui.js';

const MAX_NAMES = 5000;		/* rows at most: past that, a narrower prefix */
const GRANT_WINDOW_MS = 60000;

// The permits in use of a summary (owned mode), or null.
function inUse(x) {
	return x.mode === 'owned' || x.mode === undefined ? x.limit - x.available : null;
}

// A rate as people say it: 10 / s, 600 / min.
function rateText(x) {
	if (!x.rate)
		return '—';
	const p = x.rate_period_ms || 1000;
	const unit = p === 1000 ? 's' : p === 60000 ? 'min' : p === 3600000 ? 'h' : `${p} ms`;
	return `${count(x.rate)} / ${unit}`;
}

// A bar of use against limit (red when over it), for the eye only: the
// figure beside it says the same.
function bar(use, limit) {
	const fill = h('span');
	fill.style.width = `${limit > 0 ? Math.min(100, Math.max(0, 100 * use / limit)) : 0}%`;
	return h('span', {class: ['use', use > limit && 'over'], 'aria-hidden': 'true'}, fill);
}

export function mount(main, params) {
	const prefix = params.get('prefix') || '';
	const t0 = performance.now();
	const rows = new Map();		/* name -> {x, tr, grants: [time]} */
	let order = [];			/* names, sorted */
	let loaded = false, pending = [], frame = 0, watch = null, more = false, gen = 0;

	const input = h('input', {type: 'search', id: 'prefix', name: 'prefix', value: prefix,
		autocomplete: 'off', spellcheck: 'false'});
	const form = h('form', {class: 'inline', role: 'search', onsubmit: e => {
		e.preventDefault();
		location.hash = `#/names?prefix=${encodeURIComponent(input.value)}`;
	}},
	h('label', {for: 'prefix'}, 'Name prefix', input),
	h('button', {type: 'submit'}, 'Show'));
	const totals = h('p', {class: 'note', id: 'totals', 'aria-live': 'polite'}, 'Reading the names…');
	const tbody = h('tbody', {id: 'names'});
	const area = h('div', {id: 'names-area'});
	fill(main,
		h('h1', {tabindex: -1}, prefix ? `Semaphores under “${prefix}”` : 'Semaphores'),
		form, totals, area);

	// One row's cells from its summary.
	function cells(x) {
		const over = x.available < 0 && (x.mode === 'owned' || !x.mode);
		const use = inUse(x);
		return [
			h('td', {class: 'name'}, h('a', {href: `#/name/${seg(x.name)}`}, x.name)),
			h('td', {}, x.mode || '…'),
			h('td', {class: 'num'}, count(x.limit)),
			h('td', {class: 'num', 'data-col': 'held'}, use === null ? '—' : [count(use), bar(use, x.limit)]),
			h('td', {class: 'num'}, count(x.holders)),
			h('td', {class: 'num', 'data-col': 'waiting'}, x.waiters ?
				h('span', {class: 'badge wait'}, count(x.waiters)) : '0'),
			h('td', {'data-col': 'over'}, over ?
				h('span', {class: 'badge over'}, `over by ${count(-x.available)}`) : ''),
			h('td', {}, rateText(x)),
		];
	}

	function grantsPerMin(r, now) {
		while (r.grants.length && r.grants[0] < now - GRANT_WINDOW_MS)
			r.grants.shift();
		return r.grants.length;
	}

	function drawRow(r, fresh) {
		fill(r.tr, cells(r.x), h('td', {class: 'num', 'data-col': 'grants'},
			count(grantsPerMin(r, performance.now()))));
		r.tr.classList.toggle('enter', !!fresh);
	}

	function newRow(x) {
		const r = {x, tr: h('tr', {'data-name': x.name}), grants: []};
		drawRow(r, false);
		rows.set(x.name, r);
		return r;
	}

	function drawTotals() {
		let held = 0, waiting = 0, over = 0;
		for (const {x} of rows.values()) {
			held += Math.max(0, inUse(x) || 0);
			waiting += x.waiters || 0;
			if (x.available < 0 && (x.mode === 'owned' || !x.mode))
				over++;
		}
		fill(totals, `${count(rows.size)} names${more ? ` (the first ${count(MAX_NAMES)}: narrow the prefix for the rest)` : ''} · ` +
			`${count(held)} permits in use · ${count(waiting)} waiting` +
			(over ? ` · ${count(over)} over their limit` : ''));
	}

	// Draw the whole table from the loaded names.
	function drawAll() {
		const frag = document.createDocumentFragment();
		for (const n of order)
			frag.append(rows.get(n).tr);
		tbody.replaceChildren(frag);
		if (!area.firstChild)
			fill(area, table('Semaphores', ['Name', 'Mode', {text: 'Limit', class: 'num'},
				{text: 'In use', class: 'num'}, {text: 'Holders', class: 'num'},
				{text: 'Waiting', class: 'num'}, 'Over limit', 'Rate',
				{text: 'Grants/min', class: 'num'}], tbody));
		drawTotals();
	}

	// Where name goes in the sorted order.
	function place(name) {
		let lo = 0, hi = order.length;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if (order[mid] < name)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}

	// A name the list does not know (created, or first seen): its mode.
	async function learn(name) {
		try {
			const x = await api('GET', `/semaphores/${seg(name)}`, {query: {limit: 1}});
			const r = rows.get(name);
			if (r && !r.x.mode) {
				r.x.mode = x.mode;
				drawRow(r, false);
			}
		} catch {
			/* deleted since, or hidden: its row says what the events said */
		}
	}

	// Apply the events that came since the last frame, then draw once.
	function flush() {
		frame = 0;
		const evs = pending;
		pending = [];
		const touched = new Set();
		const now = performance.now();
		for (const ev of evs) {
			let r = rows.get(ev.name);
			if (ev.kind === 'delete') {
				if (r) {
					r.tr.remove();
					rows.delete(ev.name);
					order.splice(place(ev.name), 1);
				}
				continue;
			}
			if (!r) {
				if (rows.size >= MAX_NAMES)
					continue;
				r = newRow({name: ev.name});
				const i = place(ev.name);
				order.splice(i, 0, ev.name);
				const next = order[i + 1] !== undefined ? rows.get(order[i + 1]).tr : null;
				tbody.insertBefore(r.tr, next);
				learn(ev.name);
			}
			for (const k of ['limit', 'available', 'holders', 'waiters', 'rate', 'rate_period_ms'])
				if (ev[k] !== undefined)
					r.x[k] = ev[k];
			if (ev.kind === 'grant')
				r.grants.push(now);
			touched.add(r);
		}
		for (const r of touched)
			drawRow(r, true);
		drawTotals();
	}

	function onEvent(ev) {
		pending.push(ev);
		if (loaded && !frame)
			frame = requestAnimationFrame(flush);
	}

	// (Re)read every name under the prefix; the events that come meanwhile
	// are applied after (each carries its name's counts after it).
	async function load() {
		const my = ++gen;
		loaded = false;
		try {
			performance.mark('list-read-start');
			const items = await all('/semaphores', {prefix, limit: 1000}, MAX_NAMES);
			if (my !== gen)
				return;		/* a later load is on its way */
			performance.mark('list-read');
			more = items.length >= MAX_NAMES;
			rows.clear();
			order = [];
			for (const x of items.slice(0, MAX_NAMES)) {
				newRow(x);
				order.push(x.name);
			}
			drawAll();
			loaded = true;
			if (pending.length)
				flush();
			performance.mark('list-drawn');
			const ms = performance.now() - t0;
			main.dataset.rendered = String(rows.size);
			main.dataset.renderMs = ms.toFixed(1);
		} catch (e) {
			if (my !== gen)
				return;
			fill(area, blocked(e));
			fill(totals, '');
			main.dataset.rendered = 'error';
		}
	}

	watch = new Watch({name: prefix, prefix: true}, {
		ready: fresh => {
			if (fresh)
				load();
		},
		event: onEvent,
		denied: p => {
			/* the names may still be listed: say the list is not live */
			if (!loaded)
				load();
			fill(totals, `Not live: ${p.detail || 'your principal may not watch this prefix'}.`);
		},
	});
	/* a stream slow to start (a daemon far away, or restarting) does not
	   keep the names from showing */
	const late = setTimeout(() => {
		if (gen === 0)
			load();
	}, 2000);
	/* the grants of the last minute go out of it with time */
	const tick = setInterval(() => {
		if (!loaded)
			return;
		const now = performance.now();
		for (const r of rows.values())
			if (r.grants.length) {
				const cell = r.tr.querySelector('[data-col="grants"]');
				if (cell)
					cell.textContent = count(grantsPerMin(r, now));
			}
	}, 5000);
	return {
		unmount() {
			watch.close();
			clearInterval(tick);
			clearTimeout(late);
			cancelAnimationFrame(frame);
		},
	};
}
