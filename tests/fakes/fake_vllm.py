#!/usr/bin/env python3
"""A misbehaving stand-in for the ``vllm`` CLI, for the runner's fault-path tests.

It is not vLLM: it exists so tests can make a real subprocess that never gets healthy,
dies mid-run, or rejects a flag. Behaviour is chosen by FAKE_VLLM_MODE:
``ok`` (default), ``never_healthy``, ``die_after_requests:N``, ``bad_flag``, and for
streamed requests (claimcheck's load client): ``stream_eof:K`` (K tokens, then the
connection closes without ``[DONE]``), ``stream_stop:K`` (K tokens, then ``[DONE]``),
``usage:N`` (every requested token streamed without running usage, then a final usage of
N), ``usage_first`` (the first chunk's running usage already counts every token, the
other chunks' text comes with no new tokens), ``usage_early:K`` (the running usage jumps to
the full count on chunk K, the chunks after it carry text and no new tokens),
``usage_then_text:K`` (after K chunks the final usage-only chunk says the request is
complete, then the rest of the text arrives without usage), ``prompt_tokens:N`` (usage
reports N prompt tokens; otherwise the prompt's words, what the synthetic tokenizer
counts), ``hang`` (the request is read and never answered); ``bench_short:K`` makes
``bench serve`` record K output tokens for every request; ``bench_truncated`` leaves a
0-byte result file from the second step on (a disk that filled). ``serve`` prints vLLM-shaped log
lines; ``bench serve`` sends real HTTP requests and writes a --save-result JSON of the same
shape as vLLM's (a subset of its keys).
"""

import argparse
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib import request as urlreq


def log(msg: str) -> None:
    t = time.strftime("%m-%d %H:%M:%S")
    print(f"(APIServer pid={os.getpid()}) INFO {t} [fake.py:1] {msg}", flush=True)


def serve(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    a, rest = p.parse_known_args(argv)
    mode = os.environ.get("FAKE_VLLM_MODE", "ok")
    if mode == "bad_flag" or "--bogus-flag" in rest:
        print("vllm: error: unrecognized arguments: --bogus-flag", flush=True)
        return 2
    log("Model loading took 0.01 GiB memory and 0.1 seconds")
    log("GPU KV cache size: 4,096 tokens")
    state = {"requests": 0, "running": 0}
    limit = int(mode.split(":")[1]) if mode.startswith("die_after_requests") else None

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path == "/health" and mode != "never_healthy":
                self.send_response(200)
                self.end_headers()
            else:
                self.send_response(503)
                self.end_headers()

        def do_POST(self):
            n = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(n) or b"{}")
            state["requests"] += 1
            if limit is not None and state["requests"] > limit:
                print("ERROR vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
                      "encountered an issue.", flush=True)
                os._exit(1)
            if mode == "hang":
                time.sleep(3600)
            if body.get("stream"):
                return self.stream(body)
            state["running"] += 1
            time.sleep(0.05)
            state["running"] -= 1
            out = {"choices": [{"text": "w1 " * body.get("max_tokens", 4)}],
                   "usage": {"completion_tokens": body.get("max_tokens", 4)}}
            data = json.dumps(out).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def stream(self, body):
            """SSE as vLLM sends it with continuous usage stats (one token per chunk)."""
            want = int(body.get("max_tokens", 4))
            kind, _, arg = mode.partition(":")
            send = int(arg) if kind in ("stream_eof", "stream_stop") else want
            text = body.get("prompt") or " ".join(
                m.get("content", "") for m in body.get("messages") or [])
            ptok = int(arg) if kind == "prompt_tokens" else len(text.split())
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()

            def event(obj):
                self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
                self.wfile.flush()

            def running(i):
                if kind == "usage_first":
                    return want
                if kind == "usage_early":
                    return want if i >= int(arg) else i
                return i

            final_sent = False
            for i in range(1, send + 1):
                chunk = {"choices": [{"index": 0, "text": f" w{i}"}]}
                late = kind == "usage_then_text" and i > int(arg)
                if kind != "usage" and not late:
                    chunk["usage"] = {"prompt_tokens": ptok, "completion_tokens": running(i)}
                if late and not final_sent:
                    event({"choices": [], "usage": {"prompt_tokens": ptok,
                                                    "completion_tokens": want}})
                    final_sent = True
                event(chunk)
                time.sleep(0.002)
            if kind == "stream_eof":
                return  # the handler returns: the connection closes mid-response
            final = int(arg) if kind == "usage" else send
            if not final_sent:
                event({"choices": [], "usage": {"prompt_tokens": ptok,
                                                "completion_tokens": final}})
            self.wfile.write(b"data: [DONE]\n\n")

    httpd = ThreadingHTTPServer((a.host, a.port), H)

    def stats():
        while True:
            time.sleep(0.5)
            log(f"Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
                f"throughput: 100.0 tokens/s, Running: {state['running']} reqs, "
                f"Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%")

    threading.Thread(target=stats, daemon=True).start()
    httpd.serve_forever()
    return 0


def bench(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    for k in ("--backend", "--endpoint", "--model", "--tokenizer", "--dataset-name",
              "--percentile-metrics", "--metric-percentiles", "--request-rate",
              "--result-filename"):
        p.add_argument(k)
    p.add_argument("--base-url")
    p.add_argument("--random-input-len", type=int)
    p.add_argument("--random-output-len", type=int)
    p.add_argument("--num-prompts", type=int)
    p.add_argument("--max-concurrency", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--result-dir")
    for k in ("--save-result", "--save-detailed", "--ignore-eos"):
        p.add_argument(k, action="store_true")
    a = p.parse_args(argv)
    t0 = time.time()

    def one(i):
        st = time.time()
        try:
            req = urlreq.Request(a.base_url + a.endpoint, method="POST",
                                 data=json.dumps({"max_tokens": a.random_output_len}).encode(),
                                 headers={"Content-Type": "application/json"})
            with urlreq.urlopen(req, timeout=10) as r:
                json.loads(r.read())
            dur = time.time() - st
            return st, dur, a.random_output_len, ""
        except Exception as e:
            return st, time.time() - st, 0, f"{type(e).__name__}: {e}"

    with ThreadPoolExecutor(a.max_concurrency) as ex:
        res = list(ex.map(one, range(a.num_prompts)))
    mode = os.environ.get("FAKE_VLLM_MODE", "ok")
    if mode.startswith("bench_short:"):  # a server that stops early despite --ignore-eos
        res = [(st, d, int(mode.split(":")[1]) if not err else 0, err)
               for st, d, _, err in res]
    dur = time.time() - t0
    ok = [r for r in res if not r[3]]
    out_tokens = sum(r[2] for r in ok)
    n_out = max(1, a.random_output_len - 1)
    result = {
        "date": time.strftime("%Y%m%d-%H%M%S"), "backend": "vllm", "num_prompts": a.num_prompts,
        "max_concurrency": a.max_concurrency, "duration": dur, "completed": len(ok),
        "failed": len(res) - len(ok), "total_input_tokens": len(ok) * a.random_input_len,
        "total_output_tokens": out_tokens, "output_throughput": out_tokens / dur,
        "request_throughput": len(ok) / dur,
        "mean_ttft_ms": 10.0, "median_ttft_ms": 10.0,
        "mean_tpot_ms": 50.0 / n_out * 1000 / 1000, "median_tpot_ms": 50.0 / n_out,
        "median_itl_ms": 50.0 / n_out,
        "input_lens": [a.random_input_len] * len(res),
        "output_lens": [r[2] for r in res], "ttfts": [0.01 if not r[3] else 0 for r in res],
        "itls": [[0.05 / n_out] * (r[2] - 1) if r[2] else [] for r in res],
        "start_times": [r[0] for r in res], "errors": [r[3] for r in res],
    }
    if mode == "bench_truncated" and not Path(a.result_dir).name.startswith("00-"):
        # a full disk: the result file made and nothing written into it (steps after the first)
        Path(a.result_dir, a.result_filename).write_bytes(b"")
        print("OSError: [Errno 28] No space left on device", file=sys.stderr, flush=True)
        return 1
    Path(a.result_dir, a.result_filename).write_text(json.dumps(result))
    print(f"Successful requests: {len(ok)}", flush=True)
    return 0


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["serve"]:
        return serve(args[1:])
    if args[:2] == ["bench", "serve"]:
        return bench(args[2:])
    print(f"fake vllm: unsupported {args}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
