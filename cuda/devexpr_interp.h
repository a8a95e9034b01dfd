/*-------------------------------------------------------------------------
 * devexpr_interp.h
 *	  The interpreter of device expression programs (gh_devexpr.h), inline
 *	  for the host and the device.
 *
 * An implementation header: only the GPU kernel (devexpr.cu) and the CPU
 * twin (devexpr_cpu.c) include it, so that both run the very same code over
 * a row (GH_HD, gh_hash.h); src/ runs a program through their C entry
 * points.  Where the device cannot compute a row exactly it returns
 * GH_EXPR_HOST, and the host evaluates the original expression with
 * PostgreSQL's executor (src/devexpr.c), so nothing here raises an error.
 *-------------------------------------------------------------------------
 */
#ifndef DEVEXPR_INTERP_H
#define DEVEXPR_INTERP_H

#include <stdint.h>

#include "gh_devexpr.h"
#include "gh_hash.h"
#include "gh_values.h"

/* why a float op leaves a row to the host (gh_fexpr_op) */
#define GH_FEXPR_OVERFLOW 1
#define GH_FEXPR_UNDERFLOW 2
#define GH_FEXPR_DIV_ZERO 3

/*
 * gh_expr_scale_up multiplies *m by 10^k (0 <= k <= 18) where the result
 * stays far inside 128 bits (|m| < 2^62); returns 0 where it would not.
 */
GH_HD int
gh_expr_scale_up(__int128 *m, int k)
{
	const __int128 lim = (__int128) 1 << 62;
	__int128 f = 1;

	if (k == 0)
		return 1;
	if (k < 0 || k > 18 || *m >= lim || *m <= -lim)
		return 0;
	for (int j = 0; j < k; j++)
		f *= 10;
	*m *= f;
	return 1;
}

/*
 * gh_fexpr_op is float op (FADD, FSUB, FMUL, FDIV) of a and b in single
 * (prec 4: both are float4 values) or double precision, rounded to
 * nearest, with float.h's checks: *why is set where PostgreSQL would raise.
 */
GH_HD double
gh_fexpr_op(int op, int prec, double a, double b, int *why)
{
	double r;
	int ainf = a - a != 0 && a == a; /* infinite, not NaN */
	int binf = b - b != 0 && b == b;

	*why = 0;
	if (op == GH_EXPR_FDIV && b == 0.0 && a == a)
	{
		*why = GH_FEXPR_DIV_ZERO;
		return 0;
	}
#ifdef __CUDA_ARCH__
	if (prec == 4)
		r = op == GH_EXPR_FADD ? __fadd_rn((float) a, (float) b) :
			op == GH_EXPR_FSUB ? __fsub_rn((float) a, (float) b) :
			op == GH_EXPR_FMUL ? __fmul_rn((float) a, (float) b) :
			__fdiv_rn((float) a, (float) b);
	else
		r = op == GH_EXPR_FADD ? __dadd_rn(a, b) :
			op == GH_EXPR_FSUB ? __dsub_rn(a, b) :
			op == GH_EXPR_FMUL ? __dmul_rn(a, b) : __ddiv_rn(a, b);
#else
	if (prec == 4)
	{
		volatile float fr = op == GH_EXPR_FADD ? (float) a + (float) b :
			op == GH_EXPR_FSUB ? (float) a - (float) b :
			op == GH_EXPR_FMUL ? (float) a * (float) b : (float) a / (float) b;

		r = fr;
	}
	else
	{
		volatile double dr = op == GH_EXPR_FADD ? a + b : op == GH_EXPR_FSUB ? a - b :
			op == GH_EXPR_FMUL ? a * b : a / b;

		r = dr;
	}
#endif
	if (r - r != 0 && r == r && !ainf && !(binf && op != GH_EXPR_FDIV))
		*why = GH_FEXPR_OVERFLOW;
	else if (r == 0.0 && a != 0.0 &&
			 ((op == GH_EXPR_FMUL && b != 0.0) || (op == GH_EXPR_FDIV && !binf)))
		*why = GH_FEXPR_UNDERFLOW;
	return r;
}

/*
 * gh_expr_float_eval runs float program e over row i (gh_expr_eval's
 * contract; *out the double's bits).
 */
GH_HD int
gh_expr_float_eval(const gh_expr *e, uint32_t i, int64_t *out)
{
	double st[GH_EXPR_STACK];
	uint8_t nul[GH_EXPR_STACK];
	int sp = 0;

	for (int o = 0; o < e->nops; o++)
	{
		int op = e->op[o];
		int w = 0;

		switch (op)
		{
			case GH_EXPR_COLF:
			case GH_EXPR_COLI2F:
				if (!e->valid[o][i])
					return GH_EXPR_NULL;
				if (op == GH_EXPR_COLF)
					st[sp] = gh_bitsf(e->vals[o][i]);
				else if (e->cm[o] == 4)
				{
#ifdef __CUDA_ARCH__
					st[sp] = __ll2float_rn((long long) e->vals[o][i]);
#else
					volatile float f = (float) e->vals[o][i];

					st[sp] = f;
#endif
				}
				else
				{
#ifdef __CUDA_ARCH__
					st[sp] = __ll2double_rn((long long) e->vals[o][i]);
#else
					st[sp] = (double) e->vals[o][i];
#endif
				}
				nul[sp++] = 0;
				break;
			case GH_EXPR_FCONST:
				st[sp] = gh_bitsf(e->cm[o]);
				nul[sp++] = 0;
				break;
			case GH_EXPR_NULLV:
				st[sp] = 0;
				nul[sp++] = 1;
				break;
			case GH_EXPR_FNEG:
				st[sp - 1] = -st[sp - 1];
				break;
			case GH_EXPR_FADD:
			case GH_EXPR_FSUB:
			case GH_EXPR_FMUL:
			case GH_EXPR_FDIV:
				sp--;
				nul[sp - 1] |= nul[sp];
				if (nul[sp - 1])
					break;
				st[sp - 1] = gh_fexpr_op(op, (int) e->cm[o], st[sp - 1], st[sp], &w);
				if (w != 0)
					return GH_EXPR_HOST;
				break;
			default:
				return GH_EXPR_HOST;
		}
	}
	if (nul[0])
		return GH_EXPR_NULL;
	*out = gh_fbits(st[0]);
	return GH_EXPR_OK;
}

/*
 * gh_expr_eval runs program e over row i: GH_EXPR_OK with *out the
 * packed result at e->out_scale, GH_EXPR_NULL, or GH_EXPR_HOST.  The bounds
 * are kept simple and safe: a product's factors below 2^62, a value scaled
 * up below 2^62 first, every sum below 2^124; anything else goes to the
 * host, which is exact whatever the size.
 */
GH_HD int
gh_expr_eval(const gh_expr *e, uint32_t i, int64_t *out)
{
	const __int128 lim62 = (__int128) 1 << 62;
	const __int128 lim124 = (__int128) 1 << 124;
	__int128 m[GH_EXPR_STACK];
	int sg[GH_EXPR_STACK];
	int d[GH_EXPR_STACK];
	uint8_t nul[GH_EXPR_STACK];
	int sp = 0;

	if (e->float_out)
		return gh_expr_float_eval(e, i, out);

	for (int o = 0; o < e->nops; o++)
	{
		int a = sp - 2;
		int b = sp - 1;
		int op = e->op[o];

		switch (op)
		{
			case GH_EXPR_COL:
			{
				int64_t p;

				if (!e->valid[o][i])
					return e->conditional ? GH_EXPR_HOST : GH_EXPR_NULL;
				p = e->vals[o][i];
				m[sp] = gh_agg_num_m(p);
				d[sp] = gh_agg_num_dscale(p);
				sg[sp] = e->scale[o];
				nul[sp] = 0;
				sp++;
				break;
			}
			case GH_EXPR_COLI:
				/* integers, dates and timestamps are never held on the host:
				 * not valid is NULL */
				if (!e->valid[o][i] && !e->conditional)
					return GH_EXPR_NULL;
				m[sp] = e->valid[o][i] ? e->vals[o][i] : 0;
				d[sp] = 0;
				sg[sp] = 0;
				nul[sp] = !e->valid[o][i];
				sp++;
				break;
			case GH_EXPR_CONST:
				m[sp] = e->cm[o];
				d[sp] = e->scale[o];
				sg[sp] = e->scale[o];
				nul[sp] = 0;
				sp++;
				break;
			case GH_EXPR_COLFK:
			case GH_EXPR_FKCONST:
				/* a float column is never held on the host: not valid is NULL */
				if (op == GH_EXPR_COLFK && !e->valid[o][i] && !e->conditional)
					return GH_EXPR_NULL;
				nul[sp] = op == GH_EXPR_COLFK && !e->valid[o][i];
				m[sp] = op == GH_EXPR_FKCONST ? e->cm[o] :
					nul[sp] ? 0 : gh_agg_float_cmp_key(gh_bitsf(e->vals[o][i]));
				d[sp] = 0;
				sg[sp] = 0;
				sp++;
				break;
			case GH_EXPR_NULLV:
				m[sp] = 0;
				d[sp] = 0;
				sg[sp] = 0;
				nul[sp] = 1;
				sp++;
				break;
			case GH_EXPR_NEG:
				m[b] = -m[b];
				break;
			case GH_EXPR_NOT:
				m[b] = !m[b];
				break;
			case GH_EXPR_YEAR:
			{
				int64_t v = (int64_t) m[b];

				if (nul[b])
					break;
				if (e->cm[o] == 4 ? v == INT32_MIN || v == INT32_MAX :
					v == INT64_MIN || v == INT64_MAX)
					return GH_EXPR_HOST;
				m[b] = gh_agg_year_word(v, (int) e->cm[o]);
				sg[b] = d[b] = 0;
				break;
			}
			case GH_EXPR_ISNULL:
			case GH_EXPR_NOTNULL:
				m[b] = nul[b] == (op == GH_EXPR_ISNULL);
				sg[b] = d[b] = 0;
				nul[b] = 0;
				break;
			case GH_EXPR_ADD:
			case GH_EXPR_SUB:
			case GH_EXPR_LT:
			case GH_EXPR_LE:
			case GH_EXPR_EQ:
			case GH_EXPR_NE:
			case GH_EXPR_GE:
			case GH_EXPR_GT:
			{
				int s = sg[a] > sg[b] ? sg[a] : sg[b];

				nul[a] |= nul[b];
				if (nul[a])
				{
					m[a] = 0;
					sg[a] = d[a] = 0;
					sp--;
					break;
				}
				if (!gh_expr_scale_up(&m[a], s - sg[a]) ||
					!gh_expr_scale_up(&m[b], s - sg[b]) || m[a] >= lim124 ||
					m[a] <= -lim124 || m[b] >= lim124 || m[b] <= -lim124)
					return GH_EXPR_HOST;
				if (op == GH_EXPR_ADD || op == GH_EXPR_SUB)
				{
					m[a] = op == GH_EXPR_ADD ? m[a] + m[b] : m[a] - m[b];
					sg[a] = s;
					d[a] = d[a] > d[b] ? d[a] : d[b];
				}
				else
				{
					int c = m[a] < m[b] ? -1 : m[a] > m[b] ? 1 : 0;

					m[a] = op == GH_EXPR_LT ? c < 0 : op == GH_EXPR_LE ? c <= 0 :
						op == GH_EXPR_EQ ? c == 0 : op == GH_EXPR_NE ? c != 0 :
						op == GH_EXPR_GE ? c >= 0 : c > 0;
					sg[a] = d[a] = 0;
				}
				sp--;
				break;
			}
			case GH_EXPR_MUL:
				nul[a] |= nul[b];
				if (!nul[a] &&
					(m[a] >= lim62 || m[a] <= -lim62 || m[b] >= lim62 ||
					 m[b] <= -lim62))
					return GH_EXPR_HOST;
				m[a] *= m[b];
				sg[a] += sg[b];
				d[a] += d[b];
				sp--;
				break;
			case GH_EXPR_AND:
			case GH_EXPR_OR:
			{
				/* false (AND) or true (OR) on either side decides it */
				__int128 decide = op == GH_EXPR_OR;

				if ((!nul[a] && m[a] == decide) || (!nul[b] && m[b] == decide))
				{
					m[a] = decide;
					nul[a] = 0;
				}
				else if (nul[a] || nul[b])
					nul[a] = 1;
				else
					m[a] = !decide;
				sp--;
				break;
			}
			case GH_EXPR_JUMPF:
				sp--;
				if (nul[b] || m[b] == 0)
					o = (int) e->cm[o] - 1;
				break;
			case GH_EXPR_JUMP:
				o = (int) e->cm[o] - 1;
				break;
			case GH_EXPR_IADD:
			case GH_EXPR_ISUB:
			case GH_EXPR_IMUL:
			case GH_EXPR_INEG:
			case GH_EXPR_IDIV:
			case GH_EXPR_IMOD:
			case GH_EXPR_DDIFF:
			case GH_EXPR_DADDI:
			case GH_EXPR_DSUBI:
			{
				int x = op == GH_EXPR_INEG ? b : a;
				__int128 hi = e->cm[o] == 2 ? 32767 :
					e->cm[o] == 4 ? (__int128) 2147483647 :
					(__int128) INT64_MAX;
				/* a date operand (the first of DDIFF, DADDI, DSUBI) infinite */
				int ainf = op != GH_EXPR_INEG && (m[a] == INT32_MIN || m[a] == INT32_MAX);

				if (op != GH_EXPR_INEG)
				{
					nul[a] |= nul[b];
					sp--;
				}
				if (nul[x])
				{
					m[x] = 0;
					break;
				}
				sg[x] = d[x] = 0;
				if (op == GH_EXPR_DDIFF)
				{
					if (ainf || m[b] == INT32_MIN || m[b] == INT32_MAX)
						return GH_EXPR_HOST;
					m[a] -= m[b];
					break;
				}
				if (op == GH_EXPR_DADDI || op == GH_EXPR_DSUBI)
				{
					if (ainf)
						break;
					m[a] = op == GH_EXPR_DADDI ? m[a] + m[b] : m[a] - m[b];
					if (m[a] < GH_DATE_MIN || m[a] >= GH_DATE_END)
						return GH_EXPR_HOST;
					break;
				}
				if ((op == GH_EXPR_IDIV || op == GH_EXPR_IMOD) && m[b] == 0)
					return GH_EXPR_HOST;	/* division by zero */
				/*
				 * both operands are within 64 bits: in 128 bits neither
				 * / nor % overflows, and both truncate as C's int64 ones
				 * do (a quotient past the type is checked below; x % -1
				 * is 0, as int4mod makes it)
				 */
				m[x] = op == GH_EXPR_IADD ? m[a] + m[b] :
					op == GH_EXPR_ISUB ? m[a] - m[b] :
					op == GH_EXPR_IMUL ? m[a] * m[b] :
					op == GH_EXPR_IDIV ? m[a] / m[b] :
					op == GH_EXPR_IMOD ? m[a] % m[b] : -m[b];
				if (m[x] > hi || m[x] < -hi - 1)
					return GH_EXPR_HOST;
				break;
			}
			default:
				return GH_EXPR_HOST;
		}
	}
	if (nul[0])
		return GH_EXPR_NULL;
	if (e->all_host)
		return GH_EXPR_HOST;
	if (e->int_out)
	{
		*out = (int64_t) m[0];
		return GH_EXPR_OK;
	}
	if (!gh_expr_scale_up(&m[0], e->out_scale - sg[0]) ||
		m[0] <= -(__int128) (GH_AGG_NUM_MAX_ABS - 1) ||
		m[0] >= (__int128) (GH_AGG_NUM_MAX_ABS - 1) || d[0] > GH_AGG_NUM_MAX_DSCALE)
		return GH_EXPR_HOST;
	*out = gh_agg_num_pack((int64_t) m[0], d[0]);
	return GH_EXPR_OK;
}

#endif /* DEVEXPR_INTERP_H */
