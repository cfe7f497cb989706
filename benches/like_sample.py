#!/usr/bin/env python3
"""LIKE baseline for the long tail: substrings of 2-8 characters cut from
random question rows, each counted with LIKE over questions (title or
content) and reviews, one query at a time, through the mysql client.
Usage: python3 benches/like_sample.py DATABASE"""
import sys
import subprocess, random, time, json
def q(sql):
    return subprocess.run(["mysql","-uroot","-N","-B",sys.argv[1],"-e",sql],capture_output=True,text=True).stdout
random.seed(7)
rows=q("SELECT content FROM questions ORDER BY RAND(7) LIMIT 10").splitlines()
times=[]
for r in rows:
    n=random.randint(2,8); s=random.randint(0,max(0,len(r)-n)); kw=r[s:s+n].strip().replace("'","").replace("\\","").replace("%","").replace("_","")
    if not kw: continue
    t=time.time()
    c1=q(f"SELECT COUNT(*) FROM questions WHERE title LIKE '%{kw}%' OR content LIKE '%{kw}%'")
    c2=q(f"SELECT COUNT(*) FROM reviews WHERE content LIKE '%{kw}%'")
    dt=(time.time()-t)*1000
    times.append(dt); print(repr(kw), c1.strip(), c2.strip(), f"{dt:.0f} ms")
times.sort(); print("median", times[len(times)//2], "max", times[-1])
