// SPDX-License-Identifier: BSD-2-Clause
// console/js/signin.js - who the console is to the daemon: a bearer token
// of an http-token line (kept in this tab only, sent as Authorization), or
// none (the browser's own: a client certificate over https, or anonymous).

import {getToken, setToken} from './api.js';
import {h, fill} from './dom.js';

export function mount(main, params, ctx) {
	const input = h('input', {type: 'password', id: 'token', autocomplete: 'off', spellcheck: 'false'});
	const state = h('p', {class: 'note', id: 'signin-state', 'aria-live': 'polite'},
		getToken() ? 'A token is in use in this tab.' : 'No token: the daemon takes you for who your connection says.');
	fill(main, h('h1', {tabindex: -1}, 'Sign in'),
		h('p', {}, 'The daemon says you are ', h('strong', {id: 'principal'},
			ctx.server ? ctx.server.principal : '…'), ctx.server && ctx.server.admin ? ' (an administrator).' : '.'),
		h('form', {class: 'inline', onsubmit: async e => {
			e.preventDefault();
			setToken(input.value.trim());
			input.value = '';
			await ctx.refresh();
			location.hash = '#/';
		}},
		h('label', {for: 'token'}, 'Bearer token', input),
		h('button', {type: 'submit', id: 'use-token'}, 'Use this token')),
		h('p', {}, h('button', {type: 'button', id: 'forget-token', onclick: async () => {
			setToken('');
			await ctx.refresh();
			location.hash = '#/';
		}}, 'Forget the token')),
		state,
		h('p', {class: 'note'}, 'A token is made with semd --make-token PRINCIPAL and declared in semd.conf ' +
			'(http-token). The console keeps it for this tab only and sends it to this daemon only.'));
	return {unmount() {}};
}
