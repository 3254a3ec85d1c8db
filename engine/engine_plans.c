/*
 * engine_plans.c — a session's plans under the memory limits: building
 * and caching a new plan for a run (engine/plan.h) with its block charged
 * to the session's owner as activations and workspace, evicting older
 * plans not in flight when the cache is full or a limit leaves no room,
 * and uncharging what leaves. The planner is told the room the limits
 * leave so that it refuses before allocating; the account's charge
 * decides.
 *
 * Called by single runs (engine_run.c), batches (engine_batch.c) and the
 * session's end (engine_session.c); calls the planner and the account.
 */
#include "engine/engine_priv.h"

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* What a plan is charged as activations: its block's, and the blocks of
 * its control steps' subplans whole (they are few and small). */
static uint64_t plan_act_bytes(const struct plan *p)
{
	return p->activation_bytes + p->ctrl_bytes;
}

/* Bytes the cached plans hold, as activations and as workspace. */
static void plans_sum(const engine_session *s, uint64_t *act, uint64_t *ws)
{
	int i;

	*act = 0;
	*ws = 0;
	for (i = 0; i < s->plans.n; i++) {
		*act += plan_act_bytes(s->plans.plans[i]);
		*ws += s->plans.plans[i]->workspace_bytes;
	}
}

/* Evicts the least recently used plan not in flight and uncharges what it
 * held. Returns whether there was one. */
static bool plan_evict(engine_session *s)
{
	uint64_t act, ws;

	if (!plan_cache_evict(&s->plans, s->be))
		return false;
	plans_sum(s, &act, &ws);
	account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, s->plan_act - act);
	account_uncharge(s->acc, s->owner, ALLOC_ROLE_WORKSPACE, s->plan_ws - ws);
	s->plan_act = act;
	s->plan_ws = ws;
	return true;
}

/* The smaller of limit - used and room, where a limit of 0 is none. */
static uint64_t room_min(uint64_t room, const struct account_usage *u)
{
	uint64_t left;

	if (!u->limit)
		return room;
	left = u->device < u->limit ? u->limit - u->device : 0;
	return left < room ? left : room;
}

/* What the session's, its client's and the global limit leave for a new
 * plan, or UINT64_MAX when none applies. Only a hint for the planner, so
 * that it refuses before allocating: the charge itself decides. */
static uint64_t room_left(const engine_session *s)
{
	struct alloc_owner client = { s->owner.client, 0 };
	struct account_usage u;
	uint64_t room = UINT64_MAX;

	if (account_usage_get(s->acc, s->owner, &u) == 0)
		room = room_min(room, &u);
	if (account_usage_get(s->acc, client, &u) == 0)
		room = room_min(room, &u);
	account_totals(s->acc, &u);
	return room_min(room, &u);
}

/* env->max_block_bytes for a room: 0 means no limit to the planner, so a
 * full account asks for at most one byte. */
static size_t room_block(uint64_t room)
{
	if (room == UINT64_MAX || room > SIZE_MAX)
		return 0;
	return room ? (size_t)room : 1;
}

/* Charges a new plan's block to the session's owner. */
static int plan_charge(engine_session *s, const struct plan *p)
{
	int ret;

	ret = account_charge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, plan_act_bytes(p));
	if (ret < 0)
		return ret;
	ret = account_charge(s->acc, s->owner, ALLOC_ROLE_WORKSPACE, p->workspace_bytes);
	if (ret < 0) {
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, plan_act_bytes(p));
		return ret;
	}
	s->plan_act += plan_act_bytes(p);
	s->plan_ws += p->workspace_bytes;
	return 0;
}

/* Builds and caches the plan for the signature in s->sig and the inputs
 * in s->in_t (whose values key it where a shape needs them). A full cache
 * gives up its least recently used plan first; a plan refused for a memory
 * limit is built again once older plans have made room, if they can; if
 * they cannot, the account's charge names the limit. */
int engine__plan_make(engine_session *s, struct plan_env *env, int sig_len, struct plan **out)
{
	size_t needed = 0;
	int ret;

	if (s->plans.n == s->plans.cap && !plan_evict(s))
		return cep__set_error(CEP_EAGAIN, "each of the %d plans the session keeps is "
				      "in use by a run in flight; wait for one to finish",
				      s->plans.cap);
	env->needed_bytes = &needed;
	env->max_block_bytes = room_block(room_left(s));
	ret = plan_build(env, s->in_t, s->sig, sig_len, out);
	if (ret == CEP_ELIMIT && needed) {
		while (s->plans.n > 0 && room_left(s) < needed && plan_evict(s))
			;
		if (room_left(s) >= needed) {
			env->max_block_bytes = room_block(room_left(s));
			ret = plan_build(env, s->in_t, s->sig, sig_len, out);
		} else {
			/* Let the account say which limit is in the way. */
			ret = account_charge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, needed);
			if (ret == 0) {
				account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, needed);
				ret = cep__set_error(CEP_ELIMIT, "the plan needs %zu bytes, more "
						     "than the memory limits leave", needed);
			}
		}
	}
	if (ret < 0)
		return ret;
	ret = plan_charge(s, *out);
	if (ret < 0) {
		plan_free(*out, s->be);
		*out = NULL;
		return ret;
	}
	/* Room was made above, and nothing but this thread adds plans. */
	ret = plan_cache_insert(&s->plans, *out, s->be);
	if (ret < 0) {
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, plan_act_bytes(*out));
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_WORKSPACE, (*out)->workspace_bytes);
		s->plan_act -= plan_act_bytes(*out);
		s->plan_ws -= (*out)->workspace_bytes;
		plan_free(*out, s->be);
		*out = NULL;
		return ret;
	}
	s->stats.plans_built++;
	return 0;
}

/* Frees the session's plans (none in flight) and uncharges their blocks. */
void engine__plans_close(engine_session *s)
{
	plan_cache_close(&s->plans, s->be);
	if (!s->acc)
		return;
	account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, s->plan_act);
	account_uncharge(s->acc, s->owner, ALLOC_ROLE_WORKSPACE, s->plan_ws);
	s->plan_act = 0;
	s->plan_ws = 0;
}
