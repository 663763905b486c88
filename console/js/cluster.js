// SPDX-License-Identifier: BSD-2-Clause
// console/js/cluster.js - the cluster: its members, their roles, the leader,
// the term and how far each member is behind (the leader's view); and the
// daemon's counts of sessions, connections, holders and waiters. Read
// again when the watch stream starts again (a leader change cuts it) and,
// at most once a second, while it carries events (each is a log entry the
// members replicate); a button reads it at once.

import {api, getBase} from './api.js';
import {h, fill, table, count} from './dom.js';
import {Watch} from './live.js';
import {blocked, oneAtATime} from './ui.js';

export function mount(main, params, ctx) {
	const box = h('div', {id: 'cluster'});
	const state = h('p', {class: 'note', id: 'cluster-state', 'aria-live': 'polite'}, 'Reading…');
	let timer = 0, at = 0;
	fill(main, h('h1', {tabindex: -1}, 'Cluster'), state,
		h('p', {}, h('button', {type: 'button', id: 'cluster-refresh', onclick: () => reload()}, 'Read again')),
		box);

	function fact(label, value) {
		return h('div', {}, h('dt', {}, label), h('dd', {}, value));
	}

	// The daemon's counts of what it holds (GET /v1/stats): sessions and
	// connections among them (no request lists the sessions themselves).
	function counters(st) {
		const k = ['sessions', 'connections', 'semaphores', 'holders', 'waiters', 'grants',
			'timeouts', 'cancels', 'leases_expired', 'sessions_expired', 'deadlocks'];
		const c = st && st.counters || {};
		return h('dl', {class: 'facts', id: 'counters'}, k.filter(x => c[x] !== undefined)
			.map(x => fact(x.replace('_', ' '), count(c[x]))));
	}

	function draw(c, srv, st) {
		const leader = c.leader_id;
		const body = h('tbody', {}, (c.nodes || []).map(n => h('tr', {'data-node': n.id},
			h('td', {class: 'num'}, String(n.id)),
			h('td', {}, n.id === leader ? h('span', {class: 'badge'}, 'leader') :
				n.id === c.node_id ? c.state : '—'),
			h('td', {class: 'mono'}, n.address),
			h('td', {}, n.role),
			h('td', {class: 'num'}, n.match_index !== undefined ? count(n.match_index) : '—'),
			h('td', {class: 'num'}, n.lag !== undefined ? count(n.lag) : '—'),
			h('td', {}, n.url ? h('a', {href: `${n.url}/ui/`}, n.url) : '—'))));
		fill(box,
			h('dl', {class: 'facts'},
				fact('Mode', srv ? srv.mode : '—'),
				fact('Answered by node', String(c.node_id)),
				fact('Its state', c.state),
				fact('Leader', leader ? `node ${leader}${c.leader ? ` (${c.leader})` : ''}` : 'none'),
				fact('Term', count(c.term)),
				fact('Commit index', count(c.commit_index)),
				fact('Applied index', count(c.applied_index)),
				fact('Last index', count(c.last_index))),
			c.nodes && c.nodes.length ? table('Members', [{text: 'Node', class: 'num'}, 'State', 'Peer address',
				'Role', {text: 'Match index', class: 'num'}, {text: 'Lag (entries)', class: 'num'},
				'Console'], body) : h('p', {class: 'note'}, 'No members: this daemon is not a cluster.'),
			h('h2', {}, 'What the leader holds'), st ? counters(st) :
				h('p', {class: 'note'}, 'Its counters are not shown to this principal.'));
		fill(state, getBase() ? `Read from the leader at ${getBase()}.` : 'Read from this node.');
	}

	// Read the status: the leader's (it knows each member's lag).
	const reload = oneAtATime(async () => {
		at = performance.now();
		try {
			const [c, st] = await Promise.allSettled([api('GET', '/cluster'),
				api('GET', '/stats')]);
			const stats = st.status === 'fulfilled' ? st.value : null;
			if (c.status === 'fulfilled') {
				draw(c.value, ctx.server, stats);
			} else {
				/* not a cluster (a daemon in memory or alone): its counts still */
				fill(state, '');
				fill(box, h('p', {class: 'note', id: 'not-cluster'}, c.reason.message),
					h('h2', {}, 'What the daemon holds'), stats ? counters(stats) :
						h('p', {class: 'note'}, 'Its counters are not shown to this principal.'));
			}
		} catch (e) {
			fill(state, '');
			fill(box, blocked(e));
		}
	});

	function soon() {
		if (timer)
			return;
		timer = setTimeout(() => {
			timer = 0;
			reload();
		}, Math.max(0, 1000 - (performance.now() - at)));
	}

	const watch = new Watch({name: '', prefix: true}, {
		ready: () => reload(),
		event: () => soon(),
		denied: () => reload(),
	});
	const late = setTimeout(() => {
		if (!at)
			reload();
	}, 2000);
	return {
		unmount() {
			watch.close();
			clearTimeout(timer);
			clearTimeout(late);
		},
	};
}
