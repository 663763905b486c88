// SPDX-License-Identifier: BSD-2-Clause
// console/js/holds.js - every permit a principal holds, on every name
// (GET /v1/holds): where a person or a service stands at once. Read again
// when the watch stream of all names says that principal took or gave back
// a permit.

import {api, all, seg} from './api.js';
import {h, fill, table, count, duration, serverNow, ticking} from './dom.js';
import {Watch} from './live.js';
import {act, blocked, oneAtATime} from './ui.js';

export function mount(main, params, ctx) {
	const principal = params.get('principal') || (ctx.server && ctx.server.principal) || '';
	let loaded = false;
	const input = h('input', {type: 'text', id: 'principal', value: principal, autocomplete: 'off',
		spellcheck: 'false', placeholder: 'uid:1000, user:NAME, cn:NAME'});
	const state = h('p', {class: 'note', id: 'holds-state', 'aria-live': 'polite'}, 'Reading…');
	const box = h('div', {id: 'holds'});
	fill(main, h('h1', {tabindex: -1}, `Holds of ${principal || '…'}`),
		h('form', {class: 'inline', onsubmit: e => {
			e.preventDefault();
			location.hash = `#/holds?principal=${encodeURIComponent(input.value)}`;
		}}, h('label', {for: 'principal'}, 'Principal', input), h('button', {type: 'submit'}, 'Show')),
		state, box);

	function release(x) {
		act({title: 'Force-release a hold',
			text: `Take permit ${x.permit} (${x.n} of ${x.name}, token ${x.token}) away from ${principal}? ` +
				'The holder is told it lost it; its token stops being valid.',
			ok: 'Force-release'},
		() => api('DELETE', `/semaphores/${seg(x.name)}/permits/${seg(x.permit)}`, {query: {force: 'true'}}),
		`Permit ${x.permit} of ${x.name} is released.`);
	}

	function draw(items) {
		const body = h('tbody', {}, items.map(x => h('tr', {'data-permit': x.permit},
			h('td', {class: 'name'}, h('a', {href: `#/name/${seg(x.name)}`}, x.name)),
			h('td', {class: 'mono'}, x.permit),
			h('td', {class: 'mono'}, x.token),
			h('td', {class: 'num'}, count(x.n)),
			h('td', {}, x.client || '—'),
			h('td', {}, x.host || '—'),
			h('td', {class: 'num'}, x.pid ? String(x.pid) : '—'),
			h('td', {class: 'num', 'data-since': x.since_ms}, duration(serverNow() - x.since_ms)),
			h('td', {class: 'num', 'data-until': x.expires_ms || undefined},
				x.expires_ms ? duration(x.expires_ms - serverNow()) : 'session'),
			h('td', {}, h('button', {type: 'button', class: 'small danger',
				'aria-label': `Force-release permit ${x.permit} of ${x.name}`, onclick: () => release(x)},
			'Release…')))));
		fill(box, items.length ? table(`Holds of ${principal}`, ['Name', 'Permit', 'Token',
			{text: 'n', class: 'num'}, 'Client', 'Host', {text: 'PID', class: 'num'},
			{text: 'Held for', class: 'num'}, {text: 'Lease left', class: 'num'}, 'Action'], body) :
			h('p', {class: 'note'}, `${principal} holds nothing.`));
		fill(state, `${count(items.length)} holds.`);
	}

	const reload = oneAtATime(async () => {
		if (!principal)
			return fill(state, 'Name a principal.');
		try {
			draw(await all('/holds', {principal, limit: 1000}, 5000));
		} catch (e) {
			fill(state, '');
			fill(box, blocked(e));
		} finally {
			loaded = true;
		}
	});

	const watch = new Watch({name: '', prefix: true}, {
		ready: fresh => {
			if (fresh || !loaded)
				reload();
		},
		event: ev => {
			if (ev.principal === principal || !ev.principal)
				if (ev.kind === 'grant' || ev.kind === 'release' || ev.kind === 'delete')
					reload();
		},
		denied: () => {
			reload();
		},
	});
	const tick = ticking(main);
	return {
		unmount() {
			watch.close();
			clearInterval(tick);
		},
	};
}
