/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_list.c - the state machine driven directly, with
 * fake time (tests/daemon/test_state.h): List: paging over the ordered index,
 * pages full of hidden names, visibility (sm_ops_name.c, ordidx.c).
 */
#include "tests/daemon/test_state.h"

/* --- List paging against a model ----------------------------------------- */

#define L_PREFIXES 6
#define L_PER 40
#define L_NAMES (L_PREFIXES * L_PER + 3)

static char l_names[L_NAMES][16];	/* sorted by strcmp() */
static int l_state[L_NAMES];		/* 0 absent, 1 created, 2 auto-created, held */
static uint64_t l_rng = 0x9e3779b97f4a7c15ULL;

/* The list tests' sequence (apart from test_random's). */
static uint64_t l_rand(void)
{
	return xs64(&l_rng);
}

/* qsort order of the model's names. */
static int l_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* List; returns the reply (or NULL). */
static Semd__Reply *t_list(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *prefix, const char *after, uint32_t max)
{
	Semd__Reply *r;

	t_op(sm, c, id, SEMD__REQUEST__OP_LIST, "prefix=%s after=%s max=%u",
	    prefix, after, max);
	r = expect_code(k, id, SEMD__CODE__OK);
	if (r != NULL && r->body_case != SEMD__REPLY__BODY_LIST) {
		FAIL("reply %" PRIu64 " is not a list", id);
		return NULL;
	}
	return r;
}

/*
 * One page against the model: the first max names with the prefix after the
 * cursor, and next set (to the last one) only when more follow. Returns 0,
 * or -1 after a failure.
 */
static int l_check_page(const Semd__Reply *r, const char *prefix,
    const char *after, uint32_t max)
{
	size_t plen = strlen(prefix), n = 0, want = max ? max : 100;
	int j, more = 0;

	for (j = 0; j < L_NAMES; j++) {
		if (l_state[j] == 0 || strncmp(l_names[j], prefix, plen) != 0 ||
		    strcmp(l_names[j], after) <= 0)
			continue;
		if (n == want) {
			more = 1;
			break;
		}
		if (n >= r->list->n_entries ||
		    strcmp(r->list->entries[n]->name, l_names[j]) != 0) {
			FAIL("list prefix '%s' after '%s' max %u: entry %zu is "
			    "'%s', want '%s'", prefix, after, max, n,
			    n < r->list->n_entries ? r->list->entries[n]->name :
			    "(none)", l_names[j]);
			return -1;
		}
		if (r->list->entries[n]->holders != (l_state[j] == 2 ? 1u : 0u)) {
			FAIL("%s: holders %u", l_names[j],
			    r->list->entries[n]->holders);
			return -1;
		}
		n++;
	}
	if (n != r->list->n_entries) {
		FAIL("list prefix '%s' after '%s' max %u: %zu entries, want %zu",
		    prefix, after, max, r->list->n_entries, n);
		return -1;
	}
	if (more ? strcmp(r->list->next, r->list->entries[n - 1]->name) != 0 :
	    r->list->next[0] != '\0') {
		FAIL("list prefix '%s' after '%s' max %u: next '%s' (more: %d)",
		    prefix, after, max, r->list->next, more);
		return -1;
	}
	return 0;
}

/* Create, auto-create (a held down), free (up) or delete a random name. */
static void l_mutate(struct sm *sm, struct sm_client *a, uint64_t id)
{
	int j = (int)(l_rand() % L_NAMES);

	switch (l_rand() % 4) {
	case 0:
		t_create(sm, a, id, l_names[j], 1 + (uint32_t)(l_rand() % 3),
		    SEMD__MODE__OWNED, 0);
		expect_code(1, id, l_state[j] ? SEMD__CODE__EXISTS : SEMD__CODE__OK);
		if (l_state[j] == 0)
			l_state[j] = 1;
		break;
	case 1:
		if (l_state[j] != 0)
			break;
		t_down(sm, a, id, l_names[j], 1, 0, 0);
		if (grant_of(1, id) != NULL)
			l_state[j] = 2;
		break;
	case 2:
		if (l_state[j] != 2)
			break;
		t_up(sm, a, id, l_names[j], 1, 0);
		expect_code(1, id, SEMD__CODE__OK);
		l_state[j] = 0;		/* an idle auto-created name goes */
		break;
	default:
		if (l_state[j] == 2)
			break;
		t_delete(sm, a, id, l_names[j], 0);
		expect_code(1, id, l_state[j] ? SEMD__CODE__OK :
		    SEMD__CODE__NOT_FOUND);
		l_state[j] = 0;
		break;
	}
}

/*
 * Walks through List pages (random prefix, cursor, page size) while names
 * are created, auto-created, freed and deleted between the pages; every
 * page is checked against a sorted model and sm_check() after each step.
 */
static void test_list_paging(void)
{
	static const char *const parts[L_PREFIXES] = {
		"a/", "a/b/", "ab", "b/", "\xc3\xa9/", "z"
	};
	static const char *const prefixes[] = {
		"", "a", "a/", "a/b/", "a/1", "ab", "b", "\xc3", "\xc3\xa9/",
		"z", "zz", "~"
	};
	struct sm_client *a;
	struct sm *sm = t_start("list paging across creates, auto-creates and deletes",
	    NULL, "uid:1", &a);
	const char *prefix;
	char after[64], err[256];
	uint64_t id = 10;
	uint32_t max;
	int i, j, walk, page, pages = 0, failed = failures;
	Semd__Reply *r;

	for (i = 0, j = 0; i < L_PREFIXES; i++)
		for (int k = 0; k < L_PER; k++)
			snprintf(l_names[j++], sizeof l_names[0], "%s%d", parts[i], k);
	snprintf(l_names[j++], sizeof l_names[0], "a");
	snprintf(l_names[j++], sizeof l_names[0], "a/");
	snprintf(l_names[j++], sizeof l_names[0], "\xc3\xa9");
	qsort(l_names, L_NAMES, sizeof l_names[0], l_cmp);
	memset(l_state, 0, sizeof l_state);
	for (i = 0; i < 150; i++)
		l_mutate(sm, a, id++);
	for (walk = 0; walk < 400 && failures == failed; walk++) {
		prefix = prefixes[l_rand() % (sizeof prefixes / sizeof prefixes[0])];
		max = (uint32_t)(l_rand() % 8);		/* 0: the default */
		if (l_rand() % 3 == 0)
			snprintf(after, sizeof after, "%s%s",
			    l_names[l_rand() % L_NAMES], l_rand() % 2 ? "x" : "");
		else
			after[0] = '\0';
		for (page = 0; page < 300 && failures == failed; page++) {
			r = t_list(sm, a, 1, id, prefix, after, max);
			id++;
			pages++;
			if (r == NULL || l_check_page(r, prefix, after, max) != 0)
				break;
			for (i = (int)(l_rand() % 4); i > 0; i--)
				l_mutate(sm, a, id++);
			if (sm_check(sm, err, sizeof err) != 0)
				FAIL("walk %d page %d: %s", walk, page, err);
			if (r->list->next[0] == '\0')
				break;
			snprintf(after, sizeof after, "%s", r->list->next);
		}
		if (ncaps > MAX_CAPS - 400)
			caps_clear();
	}
	printf("# %d walks, %d pages\n", walk, pages);
	t_end(sm);
}

static void tune_many(struct sm_config *cfg)
{
	cfg->max_semaphores = 20000;
}

/*
 * 5,000 names in full pages of 1,000: next is set on the first four pages
 * and empty on the fifth (exactly full, nothing follows); then half are
 * deleted and the walk sees the other half, in order.
 */
static void test_list_full_pages(void)
{
	struct sm_client *a;
	struct sm *sm = t_start("list: full pages of 1000 at 5000 names",
	    tune_many, "uid:1", &a);
	char name[32], after[32] = "";
	uint64_t id = 10;
	size_t seen;
	int i, page;
	Semd__Reply *r;

	/* Created out of order: 7 is prime to 5000. */
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "m/%05d", (i * 7) % 5000);
		t_create(sm, a, id, name, 1, SEMD__MODE__OWNED, 0);
		expect_code(1, id, SEMD__CODE__OK);
		id++;
		if (ncaps > MAX_CAPS - 100)
			caps_clear();
	}
	t_create(sm, a, id, "n", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, id++, SEMD__CODE__OK);
	caps_clear();
	for (page = 0; page < 5; page++) {
		r = t_list(sm, a, 1, id++, "m/", after, 5000);	/* capped */
		if (r == NULL)
			break;
		EXPECT_U64(SM_LIST_MAX, r->list->n_entries);
		for (i = 0; i < (int)r->list->n_entries; i++) {
			snprintf(name, sizeof name, "m/%05d", page * 1000 + i);
			if (strcmp(r->list->entries[i]->name, name) != 0) {
				FAIL("page %d entry %d: %s, want %s", page, i,
				    r->list->entries[i]->name, name);
				break;
			}
		}
		if (page < 4)
			EXPECT(strcmp(r->list->next, name) == 0);
		else
			EXPECT(strcmp(r->list->next, "") == 0);
		snprintf(after, sizeof after, "%s", r->list->next);
	}
	for (i = 0; i < 5000; i += 2) {
		snprintf(name, sizeof name, "m/%05d", i);
		t_delete(sm, a, id, name, 0);
		expect_code(1, id++, SEMD__CODE__OK);
		if (ncaps > MAX_CAPS - 100)
			caps_clear();
	}
	CHECK_SM(sm);
	seen = 0;
	after[0] = '\0';
	for (page = 0; page < 40; page++) {
		r = t_list(sm, a, 1, id++, "m/", after, 0);	/* 100 a page */
		if (r == NULL)
			break;
		for (i = 0; i < (int)r->list->n_entries; i++) {
			snprintf(name, sizeof name, "m/%05zu", 2 * seen + 1);
			EXPECT(strcmp(r->list->entries[i]->name, name) == 0);
			seen++;
		}
		if (r->list->next[0] == '\0')
			break;
		snprintf(after, sizeof after, "%s", r->list->next);
	}
	EXPECT_U64(2500, seen);
	EXPECT_U64(24, page);
	t_end(sm);
}

/* --- List with a visibility hook ----------------------------------------- */

/*
 * The test hook: conn 1 sees everything; for conn 2, names beginning "h/"
 * are hidden as one subtree (skip_len 2), names beginning "x" one by one,
 * names beginning "q" report a skip_len longer than the name (ignored: one
 * by one), and names beginning "s" are hidden under their first byte
 * (skip_len 1). Counts the calls.
 */
struct vis {
	unsigned long	calls;
	unsigned long	bad_conn;
};

static bool vis_hook(void *arg, void *conn, const char *name, size_t len,
    size_t *skip_len)
{
	struct vis *v = arg;

	v->calls++;
	if (*skip_len != 0 || strlen(name) != len)
		v->bad_conn++;
	if ((uintptr_t)conn == 1)
		return true;
	if ((uintptr_t)conn != 2)
		v->bad_conn++;
	if (len >= 2 && memcmp(name, "h/", 2) == 0) {
		*skip_len = 2;
		return false;
	}
	if (name[0] == 's') {
		*skip_len = 1;
		return false;
	}
	if (name[0] == 'q') {
		*skip_len = len + 1;
		return false;
	}
	return name[0] != 'x';
}

/* Is name visible to conn 2 under vis_hook? */
static bool vis_shown(const char *name)
{
	return strncmp(name, "h/", 2) != 0 && name[0] != 'x' &&
	    name[0] != 'q' && name[0] != 's';
}

/* A list reply of exactly one entry, name, with next as given. */
static void expect_list1(int line, const Semd__Reply *r, const char *name,
    const char *next)
{
	if (r == NULL)
		return;
	if (r->list->n_entries != 1 ||
	    strcmp(r->list->entries[0]->name, name) != 0 ||
	    strcmp(r->list->next, next) != 0)
		FAIL("line %d: want [%s] next '%s', got %zu entries (%s) next '%s'",
		    line, name, next, r->list->n_entries,
		    r->list->n_entries > 0 ? r->list->entries[0]->name : "",
		    r->list->next);
}
#define EXPECT_LIST1(r, name, next) expect_list1(__LINE__, r, name, next)

/* Send List and return the reply, whatever its code. */
static Semd__Reply *t_list_any(struct sm *sm, struct sm_client *c,
    uintptr_t k, uint64_t id, const char *prefix, const char *after,
    uint32_t max)
{
	Semd__Reply *r;

	t_op(sm, c, id, SEMD__REQUEST__OP_LIST, "prefix=%s after=%s max=%u",
	    prefix, after, max);
	if ((r = take(k, id)) == NULL)
		FAIL("no reply to list %" PRIu64, id);
	return r;
}

/*
 * Hidden runs (a subtree, one by one, a bogus skip_len) between visible
 * ones: the restricted conn gets exactly the visible names, in order, in
 * pages of every size, with next always the last name listed; the subtree
 * costs one hook call; another conn sees everything; without the hook,
 * everything again.
 */
static void test_list_visible(void)
{
	static const char *const groups[] = { "a", "h/", "m", "q", "s", "x", "z" };
	static const char *const prefixes[] = { "", "h", "h/", "m", "q", "x", "z", "s" };
	struct sm_client *a, *b;
	struct sm *sm = t_start("list with a visibility hook: hidden runs, paging, skip_len",
	    NULL, "uid:1 uid:2", &a, &b);
	struct vis v = { 0, 0 };
	char name[32], after[32], want[64][32], got[64][32];
	size_t nwant = 0, ngot, g, p, k, total = 0;
	uint64_t id = 10;
	uint32_t max;
	int i, page;
	Semd__Reply *r;

	for (g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		for (i = 0; i < 12; i++) {
			snprintf(name, sizeof name, "%s%02d", groups[g], i);
			t_create(sm, a, id, name, 1, SEMD__MODE__OWNED, 0);
			expect_code(1, id++, SEMD__CODE__OK);
			total++;
			if (vis_shown(name))
				snprintf(want[nwant++], sizeof want[0], "%s", name);
		}
	}
	caps_clear();
	sm_set_visible(sm, vis_hook, &v);
	/* One page: the "h/" subtree and the "s" run cost one call each. */
	r = t_list(sm, b, 2, id++, "", "", 0);
	if (r != NULL) {
		EXPECT_U64(nwant, r->list->n_entries);
		for (k = 0; k < r->list->n_entries && k < nwant; k++)
			EXPECT(strcmp(r->list->entries[k]->name, want[k]) == 0);
		EXPECT(strcmp(r->list->next, "") == 0);
	}
	/* a, m, z visible (36), q and x one by one (24), h/ and s once each */
	EXPECT_U64(36 + 24 + 2, v.calls);
	EXPECT_U64(0, v.bad_conn);
	/* Pages of 1..7: exactly the visible names, next = last entry. */
	for (max = 1; max <= 7; max++) {
		ngot = 0;
		after[0] = '\0';
		for (page = 0; page < 100; page++) {
			r = t_list(sm, b, 2, id++, "", after, max);
			if (r == NULL)
				break;
			for (k = 0; k < r->list->n_entries && ngot < 64; k++)
				snprintf(got[ngot++], sizeof got[0], "%s",
				    r->list->entries[k]->name);
			if (r->list->next[0] != '\0' && (r->list->n_entries == 0 ||
			    strcmp(r->list->next, r->list->entries[
			    r->list->n_entries - 1]->name) != 0 ||
			    !vis_shown(r->list->next)))
				FAIL("max %u: next '%s' is not the last entry",
				    max, r->list->next);
			if (r->list->next[0] == '\0')
				break;
			snprintf(after, sizeof after, "%s", r->list->next);
		}
		EXPECT_U64(nwant, ngot);
		for (k = 0; k < ngot && k < nwant; k++) {
			if (strcmp(got[k], want[k]) != 0) {
				FAIL("max %u: entry %zu is %s, want %s", max, k,
				    got[k], want[k]);
				break;
			}
		}
		caps_clear();
	}
	/* Prefixes and cursors inside hidden runs. */
	for (p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
		r = t_list(sm, b, 2, id++, prefixes[p], "", 0);
		if (r == NULL)
			continue;
		for (k = 0, i = 0; k < nwant; k++)
			i += strncmp(want[k], prefixes[p], strlen(prefixes[p])) == 0;
		EXPECT_U64((size_t)i, r->list->n_entries);
		for (k = 0; k < r->list->n_entries; k++)
			EXPECT(vis_shown(r->list->entries[k]->name));
	}
	r = t_list(sm, b, 2, id++, "", "h/05", 1);
	EXPECT_LIST1(r, "m00", "m00");
	r = t_list(sm, b, 2, id++, "", "m11", 1);
	EXPECT_LIST1(r, "z00", "z00");
	/* The unrestricted conn sees every name. */
	r = t_list(sm, a, 1, id++, "", "", 1000);
	if (r != NULL)
		EXPECT_U64(total, r->list->n_entries);
	/* No hook: every name again, and no call. */
	sm_set_visible(sm, NULL, NULL);
	v.calls = 0;
	r = t_list(sm, b, 2, id++, "", "", 1000);
	if (r != NULL)
		EXPECT_U64(total, r->list->n_entries);
	EXPECT_U64(0, v.calls);
	t_end(sm);
}

/*
 * More than SM_LIST_HIDDEN_MAX names hidden one by one: a page with entries
 * ends at its last one (next set); a page with none is RESOURCE_EXHAUSTED
 * and names no hidden name; exactly SM_LIST_HIDDEN_MAX is still fine; the
 * same names hidden as a subtree cost one call.
 */
static void tune_hidden(struct sm_config *cfg)
{
	cfg->max_semaphores = 2 * SM_LIST_HIDDEN_MAX + 100;
}

static void test_list_hidden_cap(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("list with a visibility hook: the cap on hidden names",
	    tune_hidden, "uid:1 uid:2", &a, &b);
	struct vis v = { 0, 0 };
	char name[32];
	uint64_t id = 10;
	int i;
	Semd__Reply *r;

	for (i = 0; i < SM_LIST_HIDDEN_MAX + 5; i++) {
		snprintf(name, sizeof name, "x%05d", i);
		t_create(sm, a, id, name, 1, SEMD__MODE__OWNED, 0);
		expect_code(1, id++, SEMD__CODE__OK);
		snprintf(name, sizeof name, "s%05d", i);
		t_create(sm, a, id, name, 1, SEMD__MODE__OWNED, 0);
		expect_code(1, id++, SEMD__CODE__OK);
		if (ncaps > MAX_CAPS - 100)
			caps_clear();
	}
	t_create(sm, a, id, "a", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, id++, SEMD__CODE__OK);
	t_create(sm, a, id, "zz", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, id++, SEMD__CODE__OK);
	caps_clear();
	sm_set_visible(sm, vis_hook, &v);
	/* "a", then the s subtree (one call), then too many x: end at "a" */
	r = t_list(sm, b, 2, id++, "", "", 10);
	EXPECT_LIST1(r, "a", "a");
	EXPECT_U64(1 + 1 + SM_LIST_HIDDEN_MAX, v.calls);
	/* the same with a full page (max 1) */
	r = t_list(sm, b, 2, id++, "", "", 1);
	EXPECT_LIST1(r, "a", "a");
	/* from there on nothing visible within the cap */
	r = t_list_any(sm, b, 2, id++, "", "a", 10);
	if (r != NULL) {
		EXPECT_U64(SEMD__CODE__RESOURCE_EXHAUSTED, r->code);
		EXPECT(r->message != NULL && strstr(r->message,
		    "names you may not inspect under this prefix; list a "
		    "narrower prefix") != NULL);
		EXPECT(r->message != NULL && strstr(r->message, "x0") == NULL);
		EXPECT(r->body_case != SEMD__REPLY__BODY_LIST);
	}
	r = t_list_any(sm, b, 2, id++, "x", "", 0);
	if (r != NULL)
		EXPECT_U64(SEMD__CODE__RESOURCE_EXHAUSTED, r->code);
	/* exactly SM_LIST_HIDDEN_MAX under "x0": an empty page, no next */
	r = t_list(sm, b, 2, id++, "x0", "", 0);
	if (r != NULL) {
		EXPECT_U64(0, r->list->n_entries);
		EXPECT(strcmp(r->list->next, "") == 0);
	}
	/* a narrower prefix past them, and the s subtree is one call */
	r = t_list(sm, b, 2, id++, "zz", "", 0);
	EXPECT_LIST1(r, "zz", "");
	v.calls = 0;
	r = t_list(sm, b, 2, id++, "s", "", 0);
	if (r != NULL)
		EXPECT_U64(0, r->list->n_entries);
	EXPECT_U64(1, v.calls);
	EXPECT_U64(0, v.bad_conn);
	t_end(sm);
}

int main(void)
{
	test_list_paging();
	test_list_full_pages();
	test_list_visible();
	test_list_hidden_cap();
	caps_clear();
	return check_done("state list");
}
