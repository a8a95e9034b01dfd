# bench/join/workloads.sh - sourced by run.sh and plans.sh: the join
# benchmark's workloads, name -> query (each returns aggregates, so that
# run.sh can compare their text), on the tables of gen.sql.
declare -A Q
Q[int4]="SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k"
Q[text]="SELECT count(*), sum(r.v) FROM s JOIN r ON s.t = r.t"
Q[twocol]="SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k AND s.k2 = r.k2"
Q[mult]="SELECT count(*), sum(b.v) FROM s_mult a JOIN r_mult b ON a.k = b.k"
Q[selective]="SELECT count(*), sum(r.v) FROM s JOIN r_sel r ON s.k = r.k"
Q[left]="SELECT count(*), count(r.v), sum(r.v) FROM s LEFT JOIN r ON s.k = r.k"
Q[star]="SELECT d1.grp AS g1, d3.grp AS g3, count(*) AS n, sum(f.m) AS m FROM fact f JOIN dim1 d1 ON f.d1 = d1.id JOIN dim2 d2 ON f.d2 = d2.id JOIN dim3 d3 ON f.d3 = d3.id JOIN dim4 d4 ON f.d4 = d4.id WHERE d2.grp <> 3 AND d4.grp < 4 GROUP BY d1.grp, d3.grp"
Q[floor]="SELECT count(*) FROM s"
all_workloads="int4 text twocol mult selective left star floor"
