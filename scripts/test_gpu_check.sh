#!/usr/bin/env bash
# scripts/test_gpu_check.sh — tests scripts/gpu_check.sh without a GPU: its syntax; a one-line error and exit 2 on bad
# arguments (unknown stage in --only, a missing --input file); with a fake nvidia-smi that fails, that it says there is
# no GPU and stops before building (a fake make records any call); its log parsers on fixed sample logs (exact numbers,
# make -k's failed targets, nvidia-smi's clock samples); its step runner (OK, FAILED, TIMEOUT, SKIPPED (budget) before a
# start and when the budget cuts a step, SKIPPED (not built)); checkpoint removal; the corpus choice without network
# (prepared shards, --input, the data script, whose failed download says how to pass a local file); the archive (whole,
# at most its size cap, long logs cut in the middle); with --dry-run and a fake GPU, which steps each --only runs and
# their command lines (timing runs without -o and with -fp8_diag_every 0, sanitizers only when asked); and, with no time
# budget, the summary table, summary.txt, the archive and the --append-results section; the clock sampler stopped the
# moment it starts (the logs stay, nothing left running); the profile and bench stages run with stand-in trainer, ncu
# and nvidia-smi; results/latest.tsv's row writer (a new row last, an existing one replaced in place, every other line
# and the header kept, its refusals), the commit it names (-dirty), the figures the bench and dev stages write from
# stand-in output, and that a failed, refused, skipped or dry run, or trainer flags after --, write none.
# Prints "gpu-check: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
. scripts/test_lib.sh
tmp=$TMP
script=scripts/gpu_check.sh

if bash -n "$script" 2>"$tmp/syntax"; then pass syntax; else fail syntax "$(cat "$tmp/syntax")"; fi

# expect_usage_error NAME ARGS...: exit 2, nothing on stdout, one line on stderr naming the usage
expect_usage_error() {
    local name=$1
    shift
    bash "$script" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "usage: " "$tmp/err"; then
        pass "$name"
    else
        fail "$name" "rc $rc, stdout '$(cat "$tmp/out")', stderr '$(cat "$tmp/err")'"
    fi
}
expect_usage_error no_logdir
expect_usage_error unknown_option --bogus "$tmp/logs"
expect_usage_error two_logdirs "$tmp/a" "$tmp/b"
expect_usage_error unknown_stage --only build,bogus "$tmp/logs"
expect_usage_error only_without_value --only
expect_usage_error missing_input --input "$tmp/no_such_input.txt" "$tmp/logs"
if grep -q "missing LOGDIR" <(bash "$script" 2>&1); then pass no_logdir_says_so; else fail no_logdir_says_so "no 'missing LOGDIR'"; fi

# no GPU: nvidia-smi fails; make must never run
mkdir -p "$tmp/nogpu_bin"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." >&2\nexit 1\n' \
    >"$tmp/nogpu_bin/nvidia-smi"
printf '#!/bin/sh\necho "$@" >>"%s/make_called"\nexit 0\n' "$tmp" >"$tmp/nogpu_bin/make"
chmod +x "$tmp/nogpu_bin/nvidia-smi" "$tmp/nogpu_bin/make"
out=$(PATH="$tmp/nogpu_bin:$PATH" bash "$script" "$tmp/nogpu_logs" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q "no GPU" && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ]; then
    pass no_gpu_says_so
else
    fail no_gpu_says_so "rc $rc: $out"
fi
if [ ! -e "$tmp/make_called" ]; then pass no_gpu_builds_nothing; else fail no_gpu_builds_nothing "make ran: $(cat "$tmp/make_called")"; fi

# ---------------------------------------------------------------------------------------------------------------------
# the parsers, on fixed logs (sourcing the script defines its functions and runs nothing)
# shellcheck source=scripts/gpu_check.sh
. "$script"
# expect NAME WANT GOT
expect() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "want '$2', got '$3'"; fi; }

cat >"$tmp/train.log" <<'EOF'
$ ./train_gpt_fp8 -e d12 -x 8
| model                 | L 12, C 768, NH 12, V 1024 (Vp 1024), maxT 1024, 85000000 params
step    1/8 | loss 7.000000 | norm 9.0000 | lr 1.00e-05 | 900.00 ms | 9102 tok/s | ETA 0m06s | mfu 3.0% | peak memory 10.50 GiB
step    2/8 | loss 6.500000 | norm 5.0000 | lr 2.00e-05 | 95.00 ms | 86232 tok/s | ETA 0m00s | mfu 30.0% | peak memory 10.50 GiB
step    3/8 | loss 6.000000 | norm 4.0000 | lr 3.00e-05 | 96.00 ms | 85333 tok/s | ETA 0m00s | mfu 30.0% | peak memory 10.50 GiB
step    4/8 | loss 5.500000 | norm 3.0000 | lr 4.00e-05 | 97.00 ms | 84454 tok/s | ETA 0m00s | mfu 30.0% | peak memory 10.50 GiB
val loss 5.400000
step    5/8 | loss 5.000000 | norm 2.0000 | lr 5.00e-05 | 98.00 ms | 83592 tok/s | ETA 0m00s | mfu 30.0% | peak memory 10.50 GiB
step    6/8 | loss 4.800000 | norm 1.5000 | lr 6.00e-05 | 100.00 ms | 81920 tok/s | ETA 0m00s | mfu 40.0% | peak memory 11.25 GiB
step    7/8 | loss 4.600000 | norm 1.4000 | lr 7.00e-05 | 110.00 ms | 74473 tok/s | ETA 0m00s | mfu 42.0% | peak memory 10.50 GiB
step    8/8 | loss 4.500000 | norm 1.3000 | lr 8.00e-05 | 120.00 ms | 68267 tok/s | ETA 0m00s | mfu 44.6% | peak memory 10.50 GiB
val loss 4.612300
device memory in use at the end: 11.00 GiB
EOF
expect progress_after_5 "110.00 74887 3" "$(progress_stats "$tmp/train.log" 5)"
expect progress_all "202.00 71672 8" "$(progress_stats "$tmp/train.log" 0)"
expect progress_none "n/a n/a 0" "$(progress_stats "$tmp/train.log" 8)"
expect progress_missing_file "n/a n/a 0" "$(progress_stats "$tmp/no_such.log" 5)"
# mfu: the first 5 skipped: (40.0 + 42.0 + 44.6) / 3
expect mfu_after_5 "42.2%" "$(mfu_mean "$tmp/train.log" 5)"
expect peak_memory_max "11.25 GiB" "$(peak_memory "$tmp/train.log")"
expect last_train_loss "4.500000" "$(last_train_loss "$tmp/train.log")"
expect last_val_loss "4.612300" "$(last_val_loss "$tmp/train.log")"
expect bench_key "110.00 ms/step, 74887 tok/s (3 steps), mfu 42.2%, peak mem 11.25 GiB" "$(bench_key "$tmp/train.log" 5)"
# today's trainer prints neither mfu nor peak memory
sed 's/ | mfu.*//' "$tmp/train.log" >"$tmp/plain.log"
expect no_mfu_na "n/a" "$(mfu_mean "$tmp/plain.log" 5)"
expect no_peak_na "n/a" "$(peak_memory "$tmp/plain.log")"
expect bench_key_plain "110.00 ms/step, 74887 tok/s (3 steps), mfu n/a, peak mem n/a" "$(bench_key "$tmp/plain.log" 5)"
expect no_val_na "n/a" "$(last_val_loss "$tmp/no_such.log")"

cat >"$tmp/suite.log" <<'EOF'
PASS test_bf16_forward_backward
FAIL test_checkpoints (1 failed checks)
gpt-gpu: 3 passed, 1 failed
EOF
expect suite_result "3 passed, 1 failed (test_checkpoints)" "$(suite_result "$tmp/suite.log")"
expect suite_none "no summary line" "$(suite_result "$tmp/train.log")"
printf '========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n' >"$tmp/san.log"
expect sanitizer_zero "0 sanitizer errors" "$(sanitizer_errors "$tmp/san.log")"
printf '========= ERROR SUMMARY: 12 errors\n' >"$tmp/san2.log"
expect sanitizer_some "12 sanitizer errors" "$(sanitizer_errors "$tmp/san2.log")"
echo '========= RACECHECK SUMMARY: 85 hazards displayed (85 errors, 0 warnings)' >"$tmp/san3.log"
expect sanitizer_racecheck_summary "85 sanitizer errors" "$(sanitizer_errors "$tmp/san3.log")"
cat >"$tmp/quant.log" <<'EOF'
PASS cast E4M3 256x768 scale 224: bytes and amax bit-exact
65536 x 768: device copy 2900 GB/s | cast+amax 2500 GB/s (86%) | cast+transpose+amax 2100 GB/s (72%)
65536 x 3072: device copy 2950 GB/s | cast+amax 2400 GB/s (81%) | cast+transpose+amax 2300 GB/s (78%)
fp8_quantize: 8 passed, 0 failed
EOF
expect quantize_bandwidth "cast >= 81%, cast+T >= 72% of copy (copy >= 2900 GB/s)" "$(quantize_bandwidth "$tmp/quant.log")"
cat >"$tmp/make.log" <<'EOF'
nvcc ... -o train_gpt_fp8
train_gpt_fp8.cu(12): error: identifier "x" is undefined
make: *** [Makefile:171: train_gpt_fp8] Error 1
make: *** [dev/cuda/fp8_gemm] Error 2
make: *** [Makefile:171: train_gpt_fp8] Error 1
make: Target 'all' not remade because of errors.
EOF
expect failed_targets "train_gpt_fp8 dev/cuda/fp8_gemm" "$(failed_targets "$tmp/make.log")"
expect failed_targets_none "" "$(failed_targets "$tmp/quant.log")"
expect quantize_bandwidth_none "no bandwidth lines" "$(quantize_bandwidth "$tmp/suite.log")"
cat >"$tmp/gelu.log" <<'EOF'
PASS gelu_forward_fp8 e4m3 256x768 scale 224: bytes, transposed bytes and amax bit-exact
65536 x 3072: device copy 2900 GB/s | gelu_forward_fp8 301.5 us (2671 GB/s, 92% of copy), gelu_forward + cast+transpose 512.0 us, fused / separate 0.59
65536 x 3072: gelu_backward_fp8 + dbias reduce 455.2 us (its kernel and the reduce: 2654 GB/s, 92% of copy), gelu_backward + cast+transpose+dbias + reduce 702.4 us, fused / separate 0.65
gelu_fp8: 20 passed, 0 failed
EOF
expect gelu_fp8_time "forward 301.5 us (92% of copy), 0.59 of separate; backward 455.2 us, 0.65" "$(gelu_fp8_time "$tmp/gelu.log")"
# gelu_fp8 from llmc/gelu_math.h's one-exponential derivative on: the backward cast timed with the derivative it replaced
sed '/gelu_backward_fp8 + dbias reduce 455.2/a 65536 x 3072: gelu_backward_fp8 + dbias reduce with the tanhf / coshf derivative 610.4 us, this one / that 0.75' \
    "$tmp/gelu.log" >"$tmp/gelu_ab.log"
expect gelu_fp8_time_old_derivative \
    "forward 301.5 us (92% of copy), 0.59 of separate; backward 455.2 us, 0.65; 0.75 of the tanhf / coshf derivative's 610.4 us" \
    "$(gelu_fp8_time "$tmp/gelu_ab.log")"
expect gelu_fp8_time_none "no timing lines" "$(gelu_fp8_time "$tmp/suite.log")"
cat >"$tmp/layernorm.log" <<'EOF'
65536 x 768: device copy 2900 GB/s | forward: one warp per row 80.5 us (2501 GB/s, 86% of copy), one block per row 250.1 us (3.11x)
65536 x 768: backward: one warp per row 150.2 us (2680 GB/s, 92% of copy), one block per row 270.4 us (1.80x) | parameter partials 8 columns a thread 70.0 us, 1 column 95.0 us (1.36x) | column sums 5.1 us
65536 x 768: residual_forward 110.0 us (2745 GB/s, 95% of copy) | residual_layernorm_forward 150.0 us (2684 GB/s, 93% of copy), residual_forward + layernorm_forward 190.5 us, one pass / two 0.79
EOF
expect layernorm_time "forward 80.5 us (86% of copy, 3.11x), backward 150.2 us (1.80x), column sums 5.1 us" "$(layernorm_time "$tmp/layernorm.log")"
expect layernorm_time_none "no timing lines" "$(layernorm_time "$tmp/suite.log")"
cat >"$tmp/layernorm_fp8.log" <<'EOF'
PASS layernorm_forward_fp8 256x768 scale 112 from layernorm_forward's statistics: bytes, transposed bytes and amax bit-exact
65536 x 768: device copy 2900 GB/s | layernorm_forward_fp8 70.4 us (2860 GB/s, 98% of copy), the cast+transpose of the bf16 output 72.1 us, LayerNorm inside / bf16 cast 0.98
65536 x 768: before qkv and fc, residual + statistics then layernorm_forward_fp8 181.3 us (2776 GB/s, 96% of copy), residual + LayerNorm then cast+transpose 232.6 us, fused / separate 0.78
layernorm_fp8: 12 passed, 0 failed
EOF
expect layernorm_fp8_time "cast 70.4 us (98% of copy), 0.98 of the bf16 cast; with the residual pass 181.3 us, 0.78 of separate" "$(layernorm_fp8_time "$tmp/layernorm_fp8.log")"
expect layernorm_fp8_time_none "no timing lines" "$(layernorm_fp8_time "$tmp/suite.log")"
cat >"$tmp/classifier.log" <<'EOF'
16384 x 50304: device copy 2900 GB/s | classifier, 16-byte vectors 1852.4 us (2670 GB/s, 92% of copy), element by element 6012.9 us (3.25x) | evaluation (losses only) 601.7 us (2739 GB/s)
classifier: 12 passed, 0 failed
EOF
expect classifier_time "1852.4 us (92% of copy), 3.25x the element-by-element kernel; evaluation 601.7 us" "$(classifier_time "$tmp/classifier.log")"
expect classifier_time_none "no timing lines" "$(classifier_time "$tmp/suite.log")"
expect dev_programs_gelu_fp8 "dev/cuda/gelu_fp8" "$(CUDNN_PROGRAMS="" dev_programs | tr ' ' '\n' | grep -x dev/cuda/gelu_fp8)"
expect dev_programs_layernorm_fp8 "dev/cuda/layernorm_fp8" "$(CUDNN_PROGRAMS="" dev_programs | tr ' ' '\n' | grep -x dev/cuda/layernorm_fp8)"
cat >"$tmp/gemm.log" <<'EOF'
qkv.fprop          8192   2304    768 |  500.1 TFLOP/s |  900.2 TFLOP/s | 1.80x
step total (12 blocks x 4 linears + LM head, fprop+dgrad+wgrad): 1.23 TFLOP | BF16 2.46 ms (500.0 TFLOP/s) | FP8 1.54 ms (800.0 TFLOP/s) 1.60x | FP8 with LM head in BF16 (trainer default) 1.80 ms 1.37x
EOF
expect gemm_shapes_key "BF16 500.0, FP8 800.0 TFLOP/s: 1.60x (LM head BF16: 1.37x)" "$(gemm_shapes_key "$tmp/gemm.log")"
cat >"$tmp/gemm_algos.log" <<'EOF'
qkv.fprop         65536   2304    768 |  700.1 TFLOP/s | 1200.2 TFLOP/s | 1.71x | best of 8: BF16 703.0 (#0, +0.4%), best of 7: FP8 1250.0 (#2, +4.1%)
    FP8 best #2: algo id 66, tile 18, stages 20, split-k 1, swizzle 0, cluster 2
attproj.dgrad     65536    768    768 |  600.0 TFLOP/s | 1000.0 TFLOP/s | 1.67x | best of 8: BF16 660.0 (#5, +10.0%), best of 8: FP8 999.0 (#0, -0.1%)
    BF16 best #5: algo id 31, tile 21, stages 8, split-k 1, swizzle 1, cluster 0
step total (12 blocks x 4 linears + LM head, fprop+dgrad+wgrad): 9.80 TFLOP | BF16 14.00 ms (700.0 TFLOP/s) | FP8 8.40 ms (1166.7 TFLOP/s) 1.67x | FP8 with LM head in BF16 (trainer default) 9.90 ms 1.41x
best of up to 8 heuristic algorithms: BF16 13.82 ms (1.3% below the heuristic's) | FP8 8.03 ms (4.4% below) 1.72x | FP8 with LM head in BF16 9.51 ms 1.45x
EOF
expect gemm_algos_key "best of 8: BF16 1.3%, FP8 4.4% below the heuristic's choice (FP8/BF16 1.72x; LM head BF16: 1.45x); most: attproj.dgrad BF16 +10.0% (#5)" \
    "$(gemm_algos_key "$tmp/gemm_algos.log")"
expect gemm_algos_key_none "no best-of line" "$(gemm_algos_key "$tmp/gemm.log")"
cat >"$tmp/fit.log" <<'EOF'
|   activations         |    23.05 GiB  stored for the backward, logits (B 32, T 1024, -r 0)
largest micro-batch that fits: B=32 (at T 1024, -r 0, -attn cudnn, bf16; -d 32768)
largest micro-batch that fits: B=16 (at T 1024, -r 0, -attn cudnn, fp8; -d 32768)
EOF
expect fit_batch_smaller "16" "$(fit_batch "$tmp/fit.log")"
printf 'largest micro-batch that fits: B=0 (at T 1024)\nlargest micro-batch that fits: B=8 (at T 1024)\n' >"$tmp/fit0.log"
expect fit_batch_none_fits "" "$(fit_batch "$tmp/fit0.log")"
expect fit_batch_no_lines "" "$(fit_batch "$tmp/suite.log")"
# the row's words around the batch (a run said "fits BF16 and FP8 by the estimate32": B printed twice, glued)
expect fit_d48_key_found "B 16 of -d 32768 tokens fits BF16 and FP8 by the estimate" "$(fit_d48_key 16 32768 64)"
expect fit_d48_key_none "no estimate: B 64" "$(fit_d48_key "" 32768 64)"
printf 'fp8 vs bf16: final val 4.6123 vs 4.6000 (+0.27%%)\n' >"$tmp/plot.log"
expect plot_gap "final val 4.6123 vs 4.6000 (+0.27%)" "$(plot_gap "$tmp/plot.log")"
# the clock sampler's lines: utilization %, SM clock, its maximum, power W, temperature C, reasons mask; only the busy
# ones (>= 50%) count: mean (1755 + 1650 + 1980) / 3 = 1795 MHz, power (651.2 + 690 + 500) / 3 = 613.7 W
cat >"$tmp/clocks.csv" <<'EOF'
0, 345, 1980, 70.10, 35, 0x0000000000000001
98, 1755, 1980, 651.20, 62, 0x0000000000000004
100, 1650, 1980, 690.00, 63, 0x0000000000000004
97, 1980, 1980, 500.00, 60, 0x0000000000000000
12, 1980, 1980, 120.00, 58, 0x0000000000000001
EOF
expect clock_key "3 busy samples: SM clock mean 1795 MHz (1650..1980 of 1980), power mean 614 W, temperature max 63 C; clock held down by: power cap" \
    "$(clock_key "$tmp/clocks.csv")"
printf '99, 1980, 1980, [N/A], 55\n' >"$tmp/clocks_old.csv"  # an older driver: no reasons field, no power reading
expect clock_key_fewer_fields "1 busy sample: SM clock mean 1980 MHz (1980..1980 of 1980), temperature max 55 C" \
    "$(clock_key "$tmp/clocks_old.csv")"
printf '99, 1980, 1980, 400.00, 50, 0x0000000000000000\n' >"$tmp/clocks_full.csv"
expect clock_key_full_clock "1 busy sample: SM clock mean 1980 MHz (1980..1980 of 1980), power mean 400 W, temperature max 50 C; clock held down by: none" \
    "$(clock_key "$tmp/clocks_full.csv")"
printf 'Field "clocks.max.sm" is not a valid field to query.\n' >"$tmp/clocks_error.csv"
expect clock_key_smi_error 'no busy samples (nvidia-smi: Field "clocks.max.sm" is not a valid field to query.)' \
    "$(clock_key "$tmp/clocks_error.csv")"
expect clock_key_no_file "no busy samples" "$(clock_key "$tmp/no_such_clocks.csv")"
# the bench rows' short form of the same samples: the mean clock and the reasons joined over the busy samples
expect clock_brief "SM clock 1795 of 1980 MHz (power cap)" "$(clock_brief "$tmp/clocks.csv")"
expect clock_brief_full_clock "SM clock 1980 of 1980 MHz (not held down)" "$(clock_brief "$tmp/clocks_full.csv")"
expect clock_brief_no_reasons_field "SM clock 1980 of 1980 MHz" "$(clock_brief "$tmp/clocks_old.csv")"
expect clock_brief_smi_error "SM clock n/a" "$(clock_brief "$tmp/clocks_error.csv")"
expect clock_brief_no_sampler "" "$(clock_brief "$tmp/no_such_clocks.csv")"
printf '99, 1500, 1980, 700.00, 80, 0x0000000000000004\n98, 1600, 1980, 690.00, 81, 0x0000000000000020\n' >"$tmp/clocks_two.csv"
expect clock_brief_reasons_joined "SM clock 1550 of 1980 MHz (power cap, thermal (software))" "$(clock_brief "$tmp/clocks_two.csv")"
expect clock_reasons_bits "power cap, power brake" "$(clock_reasons 0x84)"
expect clock_reasons_idle_only "none" "$(clock_reasons 0x0000000000000001)"

# block_cast_over_copy: fp8_block_quantize's last timing line
printf '%s\n' '| w 4800 x 1600 | blockwise 128x128 tiles + transpose | 2100.0 | 2900.0 | 0.72 |' \
    "block_cast_over_copy 0.72 (the slowest cast's fraction of a device copy's bandwidth; target 0.80): activations 0.81, weights 0.72" \
    'fp8_block_quantize: 7 passed, 0 failed' >"$tmp/block.log"
expect block_cast_over_copy "0.72 activations 0.81, weights 0.72" "$(block_cast_over_copy "$tmp/block.log")"
expect block_cast_over_copy_none "" "$(block_cast_over_copy "$tmp/suite.log")"

# results/latest.tsv's row writer: a missing file starts with the header; a new row goes last, an existing one is
# replaced where it is, every other line stays byte for byte; what it refuses leaves the file as it was
latest="$tmp/latest/results/latest.tsv"
set_row() { latest_set "$latest" "$1" "$2" x "NVIDIA H100 80GB HBM3" abc1234 2026-11-28 "$3"; }
set_row d12_b64_fp8_over_bf16 1.245 'first' 2>"$tmp/latest_err"
expect latest_set_creates_with_header "$LATEST_HEADER|d12_b64_fp8_over_bf16	1.245	x	NVIDIA H100 80GB HBM3	abc1234	2026-11-28	first" \
    "$(paste -sd '|' "$latest")"
printf 'hand_row\t0.38-0.40\tx\tnone (2-core AMD EPYC)\t86be2c0\t2026-11-27\tby hand, with a \\ backslash\n' >>"$latest"
set_row d48_fp8_over_bf16 1.32 'second'
cp "$latest" "$tmp/latest_before"
set_row d12_b64_fp8_over_bf16 1.300 $'a\tcommand\nwith a tab, a newline and \\, kept'
expect latest_set_replaces_in_place "$(sed -n 1p "$tmp/latest_before")|d12_b64_fp8_over_bf16	1.300	x	NVIDIA H100 80GB HBM3	abc1234	2026-11-28	a command with a tab, a newline and \\, kept|$(sed -n 3,4p "$tmp/latest_before" | paste -sd '|')" \
    "$(paste -sd '|' "$latest")"
expect latest_set_leaves_no_temporary "latest.tsv" "$(ls "$tmp/latest/results")"
# a name written twice by hand keeps one row, the new one
printf 'd48_fp8_over_bf16\t1.37\tx\tH200\t6b8d234\t2026-11-27\ta duplicate\n' >>"$latest"
set_row d48_fp8_over_bf16 1.400 'third'
expect latest_set_one_row_per_name "1|1.400" \
    "$(grep -c '^d48_fp8_over_bf16	' "$latest")|$(awk -F '\t' '$1 == "d48_fp8_over_bf16" { print $2 }' "$latest")"
cp "$latest" "$tmp/latest_before"
refused=""
set_row "D12 speed" 1.0 x 2>>"$tmp/latest_err" || refused="$refused name"
set_row d12_b64_fp8_over_bf16 n/a x 2>>"$tmp/latest_err" || refused="$refused value"
set_row d12_b64_fp8_over_bf16 "" x 2>>"$tmp/latest_err" || refused="$refused empty"
printf 'metric\tvalue\tunit\tgpu\tcommit\tdate\tsection\n' >"$tmp/old_header.tsv"
latest_set "$tmp/old_header.tsv" d48_fp8_over_bf16 1.3 x H100 abc 2026-11-28 c 2>>"$tmp/latest_err" || refused="$refused header"
if [ "$refused" = " name value empty header" ] && cmp -s "$latest" "$tmp/latest_before" &&
    [ "$(wc -l <"$tmp/old_header.tsv")" -eq 1 ] && [ "$(wc -l <"$tmp/latest_err")" -eq 4 ] &&
    grep -q "is not snake_case; nothing written" "$tmp/latest_err" && grep -q "is not a number; nothing written" "$tmp/latest_err" &&
    grep -q "its first line is not the header 'name value unit gpu commit date command'" "$tmp/latest_err"; then
    pass latest_set_refusals
else
    fail latest_set_refusals "refused:$refused / $(cat "$tmp/latest_err")"
fi
# the commit: the short hash, -dirty when a tracked file differs, results/latest.tsv itself left out
mkdir -p "$tmp/repo_commit/results"
(
    cd "$tmp/repo_commit" || exit 1
    git init -q . && echo a >code.c && printf '%s\n' "$LATEST_HEADER" >results/latest.tsv && git add . &&
        git -c user.name=t -c user.email=t@t commit -qm first || exit 1
    clean=$(latest_commit)
    echo row >>results/latest.tsv
    after_write=$(latest_commit)
    echo b >>code.c
    echo "$clean $after_write $(latest_commit) $(git rev-parse --short HEAD)"
) >"$tmp/commit.out" 2>&1
read -r clean after_write dirty head <"$tmp/commit.out"
if [ -n "$head" ] && [ "$clean" = "$head" ] && [ "$after_write" = "$head" ] && [ "$dirty" = "$head-dirty" ]; then
    pass latest_commit_dirty
else
    fail latest_commit_dirty "$(cat "$tmp/commit.out")"
fi
mkdir -p "$tmp/not_a_repository"
expect latest_commit_outside_git unknown "$(cd "$tmp/not_a_repository" && GIT_CEILING_DIRECTORIES="$tmp" latest_commit)"
# the repository's own file: the header gpu_check rewrites, 7 fields a line, one row per snake_case name, the figures
# issue 56 names that were measured before it
repo_latest=results/latest.tsv
if [ "$(head -n 1 "$repo_latest")" = "$LATEST_HEADER" ] &&
    awk -F '\t' 'NF != 7 || $2 == "" || (NR > 1 && ($1 !~ /^[a-z0-9]+(_[a-z0-9]+)*$/ || seen[$1]++)) { bad = 1 } END { exit bad }' "$repo_latest" &&
    (for name in d12_b64_fp8_over_bf16 d48_fp8_over_bf16 d12_b64_bf16_over_llmc; do
        awk -F '\t' -v name="$name" '$1 == name { found = 1 } END { exit !found }' "$repo_latest" || exit 1
    done); then
    pass repository_latest_tsv_well_formed
else
    fail repository_latest_tsv_well_formed "$(awk -F '\t' '{ print NF ": " $1 }' "$repo_latest")"
fi

# shellcheck disable=SC2034 # used by the sourced functions
ROW_STEP=() ROW_RESULT=() ROW_KEY=()
add_row gpu "OK (1s)" "NVIDIA H100"
add_row build "FAILED (rc 2, 30s)" "-"
expect table "$(printf '%s\n' '| step  | result             | key number  |' '| ----- | ------------------ | ----------- |' \
    '| gpu   | OK (1s)            | NVIDIA H100 |' '| build | FAILED (rc 2, 30s) | -           |')" "$(print_table)"

# ---------------------------------------------------------------------------------------------------------------------
# the step runner (its progress lines on stderr are dropped)
# shellcheck disable=SC2034 # WORK, ANY_FAILED, DEADLINE: globals of the sourced run_step
WORK="$tmp/steps"
mkdir -p "$WORK"
ANY_FAILED=0
DEADLINE=$((SECONDS + 100))
run_step ok 10 true 2>/dev/null
# (the seconds taken are left out: a step can straddle a second)
expect step_ok "OK 0" "${STEP_RESULT%% *} $ANY_FAILED"
run_step bad 10 bash -c 'echo "it broke"; exit 3' 2>/dev/null
expect step_failed "FAILED (rc 3) 1" "$(printf '%s' "$STEP_RESULT" | sed -E 's/, [0-9]+s\)/)/') $ANY_FAILED"
add_step_row bad "n/a"
expect step_failed_key "last: it broke" "${ROW_KEY[${#ROW_KEY[@]} - 1]}"
if head -n 1 "$WORK/bad.log" | grep -q '^\$ bash -c' && grep -q "^it broke" "$WORK/bad.log"; then
    pass step_log_has_command_and_output
else
    fail step_log_has_command_and_output "$(cat "$WORK/bad.log")"
fi
ANY_FAILED=0
run_step slow 1 sleep 20 2>/dev/null
expect step_timeout "TIMEOUT (1s) 1" "$STEP_RESULT $ANY_FAILED"
run_step missing 10 ./no_such_program 2>/dev/null
expect step_not_built "SKIPPED (no_such_program not built)" "$STEP_RESULT"
# the budget: a step that cannot start, and one it cuts short, are SKIPPED (budget), not failures
ANY_FAILED=0
DEADLINE=$((SECONDS + 10))
run_step late 10 true 2>/dev/null
expect step_budget_no_start "SKIPPED (budget) 0" "$STEP_RESULT $ANY_FAILED"
# a step that never started has no key number to show: not one read from the log it did not write
add_step_row late "no step total line"
expect step_skipped_row_key "late SKIPPED (budget) -" \
    "${ROW_STEP[${#ROW_STEP[@]} - 1]} ${ROW_RESULT[${#ROW_RESULT[@]} - 1]} ${ROW_KEY[${#ROW_KEY[@]} - 1]}"
DEADLINE=$((SECONDS + 25 + 2))
STEP_MIN_SECONDS=1 run_step cut 60 sleep 30 2>/dev/null
expect step_budget_cut "SKIPPED (budget: cut after 2s) 0" "$(printf '%s' "$STEP_RESULT" | sed -E 's/after [12]s/after 2s/') $ANY_FAILED"
DEADLINE=$((SECONDS + 100))

# checkpoints go, logs stay
mkdir -p "$tmp/run"
touch "$tmp/run/model_00000020.bin" "$tmp/run/state_00000020_00000.bin" "$tmp/run/DONE_00000020" \
    "$tmp/run/model_00000010.bin.tmp.4242" "$tmp/run/state_00000010_00000.bin.tmp.4242" "$tmp/run/main.log" "$tmp/run/fp8_diag.tsv"
remove_checkpoints "$tmp/run"
expect remove_checkpoints "fp8_diag.tsv main.log" "$(ls "$tmp/run" | paste -sd ' ' -)"

# the corpus, without network
mkdir -p "$tmp/prepared" "$tmp/empty"
for f in tiny_shakespeare_train.bin tiny_shakespeare_val.bin tokenizer.bin; do echo x >"$tmp/prepared/$f"; done
expect corpus_prepared prepared "$(corpus_source "$tmp/prepared" "$tmp/input.txt")"
expect corpus_input "input $tmp/input.txt" "$(corpus_source "$tmp/empty" "$tmp/input.txt")"
expect corpus_script script "$(corpus_source "$tmp/empty" "")"
# the data script in a repository with no ../shared, no local copy and no network (curl fails): one error line that
# says how to pass a local file
mkdir -p "$tmp/repo/dev/data" "$tmp/nonet_bin"
cp dev/data/prepare_tinyshakespeare.sh "$tmp/repo/dev/data/"
printf '#!/bin/sh\nexit 6\n' >"$tmp/nonet_bin/curl"
chmod +x "$tmp/nonet_bin/curl"
err=$(PATH="$tmp/nonet_bin:$PATH" bash "$tmp/repo/dev/data/prepare_tinyshakespeare.sh" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 0 ] && printf '%s' "$err" | grep -q "make data INPUT=" && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ]; then
    pass no_network_says_how
else
    fail no_network_says_how "rc $rc: $err"
fi

# the archive: whole, under its cap, the longest logs cut in the middle when needed, never a model file a later step
# reads (the xcheck stage's starts)
mkdir -p "$tmp/work/train_fp8" "$tmp/work/xcheck/model"
head -c 3000000 /dev/urandom | base64 -w 100 >"$tmp/work/big.log"  # ~4 MB that compresses to ~3 MB
echo "s:1 trl:7.0" >"$tmp/work/train_fp8/main.log"
head -c 1200000 /dev/urandom >"$tmp/work/xcheck/model/model_00000001.bin"
cp "$tmp/work/xcheck/model/model_00000001.bin" "$tmp/model_before.bin"
mkdir -p "$tmp/archive_out"
GPU_CHECK_ARCHIVE_MAX_BYTES=1500000 archive_logs "$tmp/work" "$tmp/archive_out/logs.tar.gz"
archive_rc=$?
size=$(stat -c %s "$tmp/archive_out/logs.tar.gz" 2>/dev/null || echo 0)
if [ "$archive_rc" -eq 0 ] && [ "$size" -gt 0 ] && [ "$size" -le 1500000 ] &&
    cmp -s "$tmp/work/xcheck/model/model_00000001.bin" "$tmp/model_before.bin" &&
    tar -xzOf "$tmp/archive_out/logs.tar.gz" ./big.log | grep -q "cut from the middle of this log" &&
    [ "$(tar -xzOf "$tmp/archive_out/logs.tar.gz" ./train_fp8/main.log)" = "s:1 trl:7.0" ] && [ ! -e "$tmp/archive_out/logs.tar.gz.tmp" ]; then
    pass archive_under_cap
else
    fail archive_under_cap "rc $archive_rc, $size bytes"
fi

# ---------------------------------------------------------------------------------------------------------------------
# a fake GPU that answers
mkdir -p "$tmp/gpu_bin"
cat >"$tmp/gpu_bin/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
    *query-gpu*) echo "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB" ;;
    -L) echo "GPU 0: NVIDIA H100 80GB HBM3" ;;
    *) echo "a fake nvidia-smi" ;;
esac
EOF
cp "$tmp/nogpu_bin/make" "$tmp/gpu_bin/make"
chmod +x "$tmp/gpu_bin/nvidia-smi"

# --dry-run: which steps each --only runs, and with what command lines (nothing is run)
dry() { PATH="$tmp/gpu_bin:$PATH" bash "$script" --dry-run "$@" 2>&1; }
out=$(GPU_CHECK_LATEST="$tmp/dry_latest.tsv" dry --only train,bench "$tmp/dry1")
rc=$?
# a dry run measures nothing: no figure written, no results/latest.tsv made, no row about it
if [ ! -e "$tmp/dry_latest.tsv" ] && [ ! -e "$tmp/dry1/latest.tsv" ] && ! printf '%s\n' "$out" | grep -q latest_tsv &&
    printf '%s\n' "$out" | grep -qE '^\| bench_d12_b64_fp8_blockwise +\| DRY RUN' &&
    printf '%s\n' "$out" | grep -qE '^\| bench_d48_fp8_blockwise +\| DRY RUN'; then
    pass dry_run_writes_no_figure
else
    fail dry_run_writes_no_figure "$(ls "$tmp/dry1") / $out"
fi
archive="$tmp/dry1/gpu_check_logs.tar.gz"
bench_cmd=$(tar -xzOf "$archive" ./bench_d48_fp8.log 2>/dev/null | head -n 1)
train_cmd=$(tar -xzOf "$archive" ./train_fp8.log 2>/dev/null | head -n 1)
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -qE '^\| train_fp8 +\| DRY RUN' &&
    printf '%s\n' "$out" | grep -qE '^\| bench_d48_fp8 +\| DRY RUN' &&
    ! printf '%s\n' "$out" | grep -qE '^\| (fp8_gemm|test_gpt_fp8|nccl_plain|memcheck|gemm_shapes) ' &&
    printf '%s\n' "$out" | grep -qE '^\| build +\| DRY RUN +\| built what the stages run: train_gpt_fp8 dev/data/tokenizer' &&
    printf '%s\n' "$out" | grep -q '^command: .*gpu_check.sh --dry-run --only train,bench '; then
    pass only_train_bench_rows
else
    fail only_train_bench_rows "rc $rc: $out"
fi
# the gemm stage: gemm_shapes at the trainer's d12 shapes, then at the profile's B 64 with the heuristic's other answers
gemm_out=$(dry --only gemm "$tmp/dry_gemm")
rc=$?
algos_cmd=$(tar -xzOf "$tmp/dry_gemm/gpu_check_logs.tar.gz" ./gemm_algos.log 2>/dev/null | head -n 1)
if [ "$rc" -eq 0 ] && printf '%s\n' "$gemm_out" | grep -qE '^\| gemm_shapes +\| DRY RUN' &&
    printf '%s\n' "$gemm_out" | grep -qE '^\| gemm_algos +\| DRY RUN' &&
    [ "$algos_cmd" = '$ ./dev/cuda/gemm_shapes -e d12 -b 64 -algos 8' ]; then
    pass only_gemm_times_the_heuristics_answers
else
    fail only_gemm_times_the_heuristics_answers "rc $rc, gemm_algos command '$algos_cmd': $gemm_out"
fi
# the block recipes and FP8 attention: trained at d12 beside BF16 and delayed scaling, blockwise timed at d12 against
# both
blockwise_train_cmd=$(tar -xzOf "$archive" ./train_fp8_blockwise.log 2>/dev/null | head -n 1)
mxfp8_train_cmd=$(tar -xzOf "$archive" ./train_fp8_mxfp8.log 2>/dev/null | head -n 1)
attention_train_cmd=$(tar -xzOf "$archive" ./train_fp8_attention.log 2>/dev/null | head -n 1)
mha_train_cmd=$(tar -xzOf "$archive" ./train_fp8_attention_mha.log 2>/dev/null | head -n 1)
blockwise_bench_cmd=$(tar -xzOf "$archive" ./bench_d12_fp8_blockwise.log 2>/dev/null | head -n 1)
if [[ $blockwise_train_cmd == *" -e d12 "*" -precision fp8 -fp8_recipe blockwise -o "* ]] &&
    [[ $mxfp8_train_cmd == *" -e d12 "*" -precision fp8 -fp8_recipe mxfp8 -o "* ]] &&
    [[ $attention_train_cmd == *" -e d12 "*" -seed 1337 -precision fp8 -fp8_attention 1 -o "* ]] &&
    [[ $mha_train_cmd == *" -e d12 "*" -seed 1337 -precision fp8 -fp8_attention 2 -o "* ]] &&
    [[ $blockwise_bench_cmd == *" -e d12 "*" -precision fp8 -fp8_recipe blockwise -fp8_diag_every 0"* ]] &&
    [[ $blockwise_bench_cmd != *" -o "* ]] && printf '%s\n' "$out" | grep -qE '^\| bench_d12_fp8_blockwise +\| DRY RUN'; then
    pass block_recipes_trained_and_timed
else
    fail block_recipes_trained_and_timed \
        "$blockwise_train_cmd / $mxfp8_train_cmd / $attention_train_cmd / $mha_train_cmd / $blockwise_bench_cmd"
fi
if [[ $bench_cmd == *" -fp8_diag_every 0"* ]] && [[ $bench_cmd != *" -o "* ]] && [[ $bench_cmd == *" -e d48 "* ]]; then
    pass timing_runs_no_diagnostics_no_output
else
    fail timing_runs_no_diagnostics_no_output "$bench_cmd"
fi
if [[ $train_cmd == *" -o "* ]] && [[ $train_cmd == *" -precision fp8"* ]] && [[ $train_cmd == *" -x 200 "* ]]; then
    pass train_run_keeps_its_logs
else
    fail train_run_keeps_its_logs "$train_cmd"
fi
# TRAIN_RUNS picks the train stage's runs by name (issue 57's comparison alone: BF16, FP8 and both FP8 attentions),
# and an unknown name fails the stage in one row rather than running nothing
out=$(TRAIN_RUNS="bf16 fp8 fp8_attention fp8_attention_mha" dry --only train "$tmp/dry_runs")
steps=$(printf '%s\n' "$out" | grep -oE '^\| (train_[a-z0-9_]+|resume[a-z_]*|nan_skip|faults) ' | tr -d '| ' |
    paste -sd' ')
out_bad=$(TRAIN_RUNS="bf16 fp9" dry --only train "$tmp/dry_runs_bad")
rc_bad=$?
if [ "$steps" = "train_bf16 train_fp8 train_fp8_attention train_fp8_attention_mha" ] && [ "$rc_bad" -eq 1 ] &&
    printf '%s\n' "$out_bad" | grep -qE "^\| train_runs +\| FAILED \(unknown run 'fp9'\)" &&
    printf '%s\n' "$out_bad" | grep -qE '^\| train_bf16 +\| DRY RUN'; then
    pass train_runs_picks_the_runs
else
    fail train_runs_picks_the_runs "steps '$steps', rc $rc_bad: $out_bad"
fi
out=$(TRAIN_STEPS=20 dry --only train "$tmp/dry2" -- -fp8_margin 1)
train_cmd=$(tar -xzOf "$tmp/dry2/gpu_check_logs.tar.gz" ./train_bf16.log 2>/dev/null | head -n 1)
if [[ $train_cmd == *" -x 20 "* ]] && [[ $train_cmd == *" -fp8_margin 1" ]]; then
    pass train_steps_and_extra_flags
else
    fail train_steps_and_extra_flags "$train_cmd"
fi
resume_cmd=$(tar -xzOf "$tmp/dry2/gpu_check_logs.tar.gz" ./resume.log 2>/dev/null | head -n 1)
if printf '%s\n' "$out" | grep -qE '^\| resume +\| DRY RUN' && [[ $resume_cmd == *"-debug_kill_step 9"* ]] &&
    [[ $resume_cmd == *" -y 1 "* ]] && [[ $resume_cmd == *" -n 6 -v 6 "* ]] && [[ $resume_cmd == *" -fp8_diag_every 4 "* ]] &&
    [[ $resume_cmd == *" -fp8_margin 1" ]]; then
    pass train_stage_resume_step
else
    fail train_stage_resume_step "$resume_cmd"
fi
resume_recipes_ok=1
for recipe in current blockwise mxfp8; do
    cmd=$(tar -xzOf "$tmp/dry2/gpu_check_logs.tar.gz" ./resume_$recipe.log 2>/dev/null | head -n 1)
    if ! printf '%s\n' "$out" | grep -qE "^\| resume_$recipe +\| DRY RUN" || [[ $cmd != *"-debug_kill_step 9"* ]] ||
        [[ $cmd != *" -fp8_recipe $recipe "* ]] || [[ $cmd != *" -d 4096 "* ]]; then
        resume_recipes_ok=0
        resume_recipes_cmd=$cmd
    fi
done
if [ "$resume_recipes_ok" = 1 ] && [[ $resume_cmd == *" -d 4096 "* ]] && [[ $resume_cmd == *" -fp8_recipe delayed "* ]]; then
    pass train_stage_resumes_every_fp8_recipe_with_accumulation
else
    fail train_stage_resumes_every_fp8_recipe_with_accumulation "${resume_recipes_cmd:-$resume_cmd}"
fi
nan_cmd=$(tar -xzOf "$tmp/dry2/gpu_check_logs.tar.gz" ./nan_skip.log 2>/dev/null | head -n 1)
if printf '%s\n' "$out" | grep -qE '^\| nan_skip +\| DRY RUN' && [[ $nan_cmd == *" -debug_nan_step 3 "* ]] &&
    [[ $nan_cmd == *" -precision fp8 "* ]] && [[ $nan_cmd == *" -fp8_margin 1" ]]; then
    pass train_stage_nan_skip_step
else
    fail train_stage_nan_skip_step "$nan_cmd"
fi
# dev/build_llmc.sh (make llmc-baseline) on a stand-in llm.c checkout with llm.c f1e2ace's two lines and an nvcc that
# records its arguments: the copy gets both changes, cuDNN's flags reach both compiles, one line says what was built;
# a folder without llm.c is refused in one line
mkdir -p "$tmp/fake_llmc/llmc"
printf '// llm.c\n' >"$tmp/fake_llmc/train_gpt2.cu"
printf 'int f() {\n        cudaCheck_(cudaMemAdvise(*out, bytes, cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId), file, line);\n}\n' \
    >"$tmp/fake_llmc/llmc/cuda_utils.cuh"
printf '#if __has_include(<nvml.h>)\n#define USE_NVML 1\n#endif\n' >"$tmp/fake_llmc/llmc/mfu.h"
printf '#!/usr/bin/env bash\necho "$*" >>"%s"\nprev=""\nfor a in "$@"; do [ "$prev" = -o ] && : >"$a"; prev=$a; done\n' \
    "$tmp/fake_nvcc.args" >"$tmp/fake_nvcc"
chmod +x "$tmp/fake_nvcc"
build_out=$(NVCC="$tmp/fake_nvcc" CUDNN_CFLAGS="-I/cudnn/include" CUDNN_LDLIBS="-lcudnn -lnvrtc" \
    ./dev/build_llmc.sh "$tmp/fake_llmc" "$tmp/llmc_build" 2>&1)
refused=$(./dev/build_llmc.sh "$tmp/no_llmc" "$tmp/llmc_build2" 2>&1)
refused_rc=$?
if [ "$build_out" = "build_llmc: $tmp/llmc_build/train_gpt2cu, llm.c from $tmp/fake_llmc, with cuDNN; changed: cudaMemAdvise's location NVML off" ] &&
    grep -q 'host_location.type = cudaMemLocationTypeHost' "$tmp/llmc_build/llmc/cuda_utils.cuh" &&
    grep -q '^#if 0  // dev/build_llmc.sh: NVML off' "$tmp/llmc_build/llmc/mfu.h" &&
    grep -q -- '-c .*-DENABLE_CUDNN -I/cudnn/include llmc/cudnn_att.cpp -o cudnn_att.o' "$tmp/fake_nvcc.args" &&
    grep -q -- '-DENABLE_BF16 -DNO_USE_MPI -DENABLE_CUDNN -I/cudnn/include train_gpt2.cu cudnn_att.o -lcublas -lcublasLt -lcudnn -lnvrtc -o train_gpt2cu' \
        "$tmp/fake_nvcc.args" &&
    [ "$refused_rc" -eq 1 ] && [ "$(printf '%s\n' "$refused" | wc -l)" -eq 1 ] &&
    [[ $refused == "build_llmc: $tmp/no_llmc is not an llm.c checkout"* ]]; then
    pass build_llmc_changes_and_flags
else
    fail build_llmc_changes_and_flags "$build_out / $refused (rc $refused_rc) / $(cat "$tmp/fake_nvcc.args" 2>/dev/null)"
fi
# the llmc stage (only when named): llm.c built from LLMC_DIR, then it and our BF16 trainer at d12 B 64 at GPT-2's
# vocabulary (ours on the shards without our tokenizer, -V 50257); without an llm.c checkout it is skipped, says why,
# and writes nothing into results/latest.tsv
out=$(LLMC_DIR="$tmp/no_llmc" dry --only llmc "$tmp/dry_llmc")
llmc_build_cmd=$(tar -xzOf "$tmp/dry_llmc/gpu_check_logs.tar.gz" ./llmc_build.log 2>/dev/null | head -n 1)
llmc_cmd=$(tar -xzOf "$tmp/dry_llmc/gpu_check_logs.tar.gz" ./llmc_train_gpt2cu.log 2>/dev/null | head -n 1)
ours_cmd=$(tar -xzOf "$tmp/dry_llmc/gpu_check_logs.tar.gz" ./llmc_ours_bf16.log 2>/dev/null | head -n 1)
if [[ $llmc_build_cmd == *"make llmc-baseline LLMC_DIR=$tmp/no_llmc"* ]] &&
    [[ $llmc_cmd == *"./dev/llmc/train_gpt2cu -i "*" -e d12 -b 64 -t 1024 "* ]] &&
    llmc_i=$(sed -E 's/.* -i ([^ ]+) .*/\1/' <<<"$llmc_cmd") && [[ $llmc_cmd == *" -j $llmc_i "* ]] &&
    [[ $ours_cmd == *"./train_gpt_fp8 -i "*" -V 50257 -e d12 -b 64 -t 1024 "*" -precision bf16 "* ]] &&
    [[ $ours_cmd != *" -tk "* ]] && printf '%s\n' "$out" | grep -qE '^\| llmc_ours_bf16 +\| DRY RUN'; then
    pass llmc_stage_commands
else
    fail llmc_stage_commands "$llmc_build_cmd / $llmc_cmd / $ours_cmd"
fi
llmc_table=$(
    # shellcheck disable=SC2034 # globals of the sourced stage
    WORK="$tmp/llmc_skip" LOGDIR="$tmp/llmc_skip_out" DEADLINE=$((SECONDS + 60)) ANY_FAILED=0 ARCHIVE_OVER=0 STARTED=now
    # shellcheck disable=SC2034
    GPU_NAME=cpu GPU_DRIVER=- GPU_MEMORY=- COMMIT=- COMMAND_LINE=test STAGES=llmc DRY_RUN=0 EXTRA=() BENCH_STEPS=30 SKIP=5
    # shellcheck disable=SC2034
    ROW_STEP=() ROW_RESULT=() ROW_KEY=() LATEST_NOTES=() LATEST_FAILED=0 LATEST_STAGE_WROTE=0 LATEST_WROTE=0
    # shellcheck disable=SC2034
    GPU_CHECK_LATEST="$tmp/llmc_latest.tsv" LATEST_TSV="$tmp/llmc_latest.tsv"
    mkdir -p "$WORK" "$LOGDIR"
    LLMC_DIR="$tmp/no_llmc" stage_llmc >/dev/null 2>&1
    print_table
)
if printf '%s\n' "$llmc_table" | grep -qE '^\| llmc_build +\| SKIPPED \(no llm.c in .*no_llmc: set LLMC_DIR\)' &&
    printf '%s\n' "$llmc_table" | grep -qE '^\| latest_tsv_llmc +\| \(nothing written\) +\| d12_b64_bf16_over_llmc not written: no llm.c checkout' &&
    [ ! -e "$tmp/llmc_latest.tsv" ] && ! printf '%s\n' "$llmc_table" | grep -q llmc_train_gpt2cu; then
    pass llmc_stage_skipped_without_llmc
else
    fail llmc_stage_skipped_without_llmc "$llmc_table"
fi
# llm.c built without cuDNN (no frontend headers carried): its time is not issue 56's baseline, so no figure is written
mkdir -p "$tmp/llmc_nocudnn_dir" && touch "$tmp/llmc_nocudnn_dir/train_gpt2.cu"
llmc_table=$(
    # shellcheck disable=SC2034 # globals of the sourced stage
    WORK="$tmp/llmc_nocudnn" LOGDIR="$tmp/llmc_nocudnn_out" DEADLINE=$((SECONDS + 600)) ANY_FAILED=0 ARCHIVE_OVER=0
    # shellcheck disable=SC2034
    STARTED=now GPU_NAME=cpu GPU_DRIVER=- GPU_MEMORY=- COMMIT=- COMMAND_LINE=test STAGES=llmc DRY_RUN=0 EXTRA=()
    # shellcheck disable=SC2034
    BENCH_STEPS=30 SKIP=5 ROW_STEP=() ROW_RESULT=() ROW_KEY=() LATEST_NOTES=() LATEST_FAILED=0 LATEST_STAGE_WROTE=0
    # shellcheck disable=SC2034
    LATEST_WROTE=0 GPU_CHECK_LATEST="$tmp/llmc_nocudnn.tsv" LATEST_TSV="$tmp/llmc_nocudnn.tsv"
    # shellcheck disable=SC2034
    DATA_FLAGS=(-i "$tmp/train.bin" -j "$tmp/val.bin")
    mkdir -p "$WORK" "$LOGDIR"
    run_step() {  # a stand-in: the build says it went without cuDNN, the runs print step times
        local name=$1
        STEP_RC=0 STEP_RESULT=PASS
        if [ "$name" = llmc_build ]; then
            echo "build_llmc: x/train_gpt2cu, llm.c from y, without cuDNN; changed: nothing" >"$WORK/$name.log"
        else
            for i in $(seq 1 30); do
                printf 'step %4d/30 | loss 7.0 (+0.00z)| norm 1.0 (+0.00z)| lr 1.00e-04 | 100.00 ms | 40.0%% bf16 MFU | 600000 tok/s\n' "$i"
            done >"$WORK/$name.log"
        fi
    }
    LLMC_DIR="$tmp/llmc_nocudnn_dir" stage_llmc >/dev/null 2>&1
    print_table
)
if printf '%s\n' "$llmc_table" | grep -qE '^\| latest_tsv_llmc +\| \(nothing written\) +\| d12_b64_bf16_over_llmc not written: llm.c built without cuDNN' &&
    [ ! -e "$tmp/llmc_nocudnn.tsv" ]; then
    pass llmc_without_cudnn_writes_no_figure
else
    fail llmc_without_cudnn_writes_no_figure "$llmc_table"
fi
# the xcheck stage's commands: the model file from the CPU trainer, then per recipe both trainers from it with the same
# flags (gradient accumulation -d 2*B*T, the NaN step, the recipe's flags) and compare_runs expecting step 4 skipped
out=$(dry --only xcheck "$tmp/dry_xcheck")
xcheck_log() { tar -xzOf "$tmp/dry_xcheck/gpu_check_logs.tar.gz" "./$1.log" 2>/dev/null | head -n 1; }
model_cmd=$(xcheck_log xcheck_model)
if printf '%s\n' "$out" | grep -qE 'built what the stages run: train_gpt_fp8 train_gpt_fp8_cpu dev/compare_runs' &&
    [[ $model_cmd == *"./train_gpt_fp8_cpu "*" -L 2 -C 128 -NH 4 -b 4 -t 64 -x 1 "*"-o "*"/xcheck/model"* ]]; then
    pass xcheck_model_command
else
    fail xcheck_model_command "$model_cmd / $out"
fi
for recipe in bf16 fp8_delayed fp8_current fp8_blockwise fp8_mxfp8; do
    cmd=$(xcheck_log "xcheck_$recipe")
    case $recipe in
        bf16) recipe_flags=" -precision bf16" ;;
        fp8_delayed) recipe_flags=" -precision fp8 -fp8_recipe delayed -fp8_amax_history_len 32" ;;
        *) recipe_flags=" -precision fp8 -fp8_recipe ${recipe#fp8_}" ;;
    esac
    if printf '%s\n' "$out" | grep -qE "^\| xcheck_$recipe +\| DRY RUN" && [[ $cmd == *" ./train_gpt_fp8 "* ]] &&
        [[ $cmd == *" ./dev/compare_runs "*" -skipped 4 -- "* ]] &&
        [[ $cmd == *" -e "*"/xcheck/model/model_00000001.bin -b 4 -t 64 -d 512 -x 20 "* ]] &&
        [[ $cmd == *" -debug_nan_step 3$recipe_flags"* ]]; then
        pass "xcheck_${recipe}_command"
    else
        fail "xcheck_${recipe}_command" "$cmd"
    fi
done
# FP8 attention's runs (each backward input: -fp8_attention 1 and 2) start from a model with heads of 64 (cuDNN's FP8
# attention at GPT-2's head size), made once
model_cmd=$(xcheck_log xcheck_model_hs64)
cmd=$(xcheck_log xcheck_fp8_delayed_attention)
cmd_mha=$(xcheck_log xcheck_fp8_delayed_attention_mha)
if [[ $model_cmd == *"./train_gpt_fp8_cpu "*" -L 2 -C 128 -NH 2 -b 4 -t 64 -x 1 "*"-o "*"/xcheck/hs64"* ]] &&
    [[ $cmd == *" -loss_first 0.00390625 -loss 0.015625 -norm 0.0625 "*" -skipped 4 -- "* ]] &&
    [[ $cmd == *" -e "*"/xcheck/hs64/model_00000001.bin -b 4 -t 64 -d 512 -x 20 "* ]] &&
    [[ $cmd == *" -debug_nan_step 3 -precision fp8 -fp8_recipe delayed -fp8_amax_history_len 32 -fp8_attention 1"* ]] &&
    [[ $cmd_mha == *" -loss_first 0.00390625 -loss 0.015625 -norm 0.0625 "*" -skipped 4 -- "* ]] &&
    [[ $cmd_mha == *" -e "*"/xcheck/hs64/model_00000001.bin -b 4 -t 64 -d 512 -x 20 "* ]] &&
    [[ $cmd_mha == *" -debug_nan_step 3 -precision fp8 -fp8_recipe delayed -fp8_amax_history_len 32 -fp8_attention 2"* ]]
then
    pass xcheck_fp8_delayed_attention_command
else
    fail xcheck_fp8_delayed_attention_command "$model_cmd / $cmd / $cmd_mha"
fi
# blockwise at ks off 128 starts from a model of C 160, made once, and runs 15 steps at B*T 192
model_cmd=$(xcheck_log xcheck_model_c160)
cmd=$(xcheck_log xcheck_fp8_blockwise_c160)
if [[ $model_cmd == *"./train_gpt_fp8_cpu "*" -L 2 -C 160 -NH 5 -b 4 -t 64 -x 1 "*"-o "*"/xcheck/c160"* ]] &&
    [[ $cmd == *" -e "*"/xcheck/c160/model_00000001.bin -b 3 -t 64 -d 384 -x 15 "* ]] &&
    [[ $cmd == *" -debug_nan_step 3 -precision fp8 -fp8_recipe blockwise"* ]] &&
    [ "$(tar -tzf "$tmp/dry_xcheck/gpu_check_logs.tar.gz" | grep -c 'xcheck_model')" -eq 3 ]; then
    pass xcheck_fp8_blockwise_c160_command
else
    fail xcheck_fp8_blockwise_c160_command "$model_cmd / $cmd"
fi

out=$(dry "$tmp/dry3")
if printf '%s\n' "$out" | grep -qE '^\| fp8_update +\|' && printf '%s\n' "$out" | grep -qE '^\| nccl_1rank +\|' &&
    printf '%s\n' "$out" | grep -qE '^\| build +\| DRY RUN' && ! printf '%s\n' "$out" | grep -qE '^\| (memcheck|racecheck_[a-z0-9]+) '; then
    pass default_stages_without_sanitize
else
    fail default_stages_without_sanitize "$out"
fi
out=$(dry --only sanitize "$tmp/dry4")
if printf '%s\n' "$out" | grep -qE '^\| memcheck +\|' && printf '%s\n' "$out" | grep -qE '^\| racecheck_fp8 +\|' &&
    printf '%s\n' "$out" | grep -qE '^\| racecheck_others +\|' &&
    printf '%s\n' "$out" | grep -qE 'built what the stages run: test_gpt_fp8'; then
    pass sanitize_when_asked
else
    fail sanitize_when_asked "$out"
fi
out=$(dry --only profile "$tmp/dry5")
profile_log() { tar -xzOf "$tmp/dry5/gpu_check_logs.tar.gz" "./$1.log" 2>/dev/null | head -n 1; }
time_cmd=$(profile_log profile_time_fp8_current)
ncu_cmd=$(profile_log profile_fp8)
if printf '%s\n' "$out" | grep -qE 'built what the stages run: train_gpt_fp8 *\|' &&
    [ "$(printf '%s\n' "$out" | grep -cE '^\| profile_(time_)?(bf16|fp8|fp8_current) +\| DRY RUN')" -eq 6 ] &&
    printf '%s\n' "$out" | grep -qE '^\| profile_summary +\| DRY RUN' &&
    [[ $time_cmd == *"./train_gpt_fp8 "*" -e d12 -b 64 -t 1024 "*" -fp8_diag_every 0 -x 15 -precision fp8 -fp8_recipe current"* ]] &&
    [[ $time_cmd != *" -o "* ]] && [[ $ncu_cmd == *" --profile-from-start off "* ]] &&
    [[ $ncu_cmd == *" ./train_gpt_fp8 "*" -e d12 -b 64 "*" -x 3 -profile_step 3 -precision fp8"* ]] &&
    [[ $ncu_cmd == *" gpu__time_duration.sum\\,sm__cycles_elapsed.avg.per_second "* ]] &&  # printf %q's comma
    ! printf '%s\n' "$out" | grep -qE '^\| (train_fp8|bench_d12_bf16|memcheck) '; then
    pass profile_when_asked
else
    fail profile_when_asked "$time_cmd / $ncu_cmd / $out"
fi
# fp8_unfused, fp8_current_unfused: FP8 delayed and current scaling with GELU and LayerNorm apart from the casts,
# beside the fused default
out=$(PROFILE_RUNS="fp8 fp8_unfused fp8_current_unfused" dry --only profile "$tmp/dry_unfused")
unfused_cmd=$(tar -xzOf "$tmp/dry_unfused/gpu_check_logs.tar.gz" ./profile_fp8_unfused.log 2>/dev/null | head -n 1)
fused_cmd=$(tar -xzOf "$tmp/dry_unfused/gpu_check_logs.tar.gz" ./profile_time_fp8.log 2>/dev/null | head -n 1)
current_cmd=$(tar -xzOf "$tmp/dry_unfused/gpu_check_logs.tar.gz" ./profile_fp8_current_unfused.log 2>/dev/null |
    head -n 1)
if [ "$(printf '%s\n' "$out" | grep -cE '^\| profile_(time_)?fp8(_current)?(_unfused)? +\| DRY RUN')" -eq 6 ] &&
    [[ $unfused_cmd == *" -x 3 -profile_step 3 -precision fp8 -fp8_fused_casts 0"* ]] &&
    [[ $current_cmd == *" -x 3 -profile_step 3 -precision fp8 -fp8_recipe current -fp8_fused_casts 0"* ]] &&
    [[ $fused_cmd == *" -x 15 -precision fp8"* ]] && [[ $fused_cmd != *"fused_casts"* ]]; then
    pass profile_fp8_unfused_run
else
    fail profile_fp8_unfused_run "$unfused_cmd / $current_cmd / $fused_cmd / $out"
fi
# bf16_graphs, fp8_graphs: the same with -cuda_graph 1, their step time and idle time beside the launches one by one
out=$(PROFILE_RUNS="fp8 fp8_graphs bf16_graphs" dry --only profile "$tmp/dry_graphs")
graphs_cmd=$(tar -xzOf "$tmp/dry_graphs/gpu_check_logs.tar.gz" ./profile_idle_fp8_graphs.log 2>/dev/null | head -n 1)
bf16_graphs_cmd=$(tar -xzOf "$tmp/dry_graphs/gpu_check_logs.tar.gz" ./profile_time_bf16_graphs.log 2>/dev/null |
    head -n 1)
if [ "$(printf '%s\n' "$out" | grep -cE '^\| profile_(time_|idle_)?(fp8|fp8_graphs|bf16_graphs) +\| DRY RUN')" -eq 9 ] &&
    [[ $graphs_cmd == *" -precision fp8 -cuda_graph 1 -x 8 -idle_step 8"* ]] &&
    [[ $bf16_graphs_cmd == *" -x 15 -precision bf16 -cuda_graph 1"* ]]; then
    pass profile_graphs_runs
else
    fail profile_graphs_runs "$graphs_cmd / $bf16_graphs_cmd / $out"
fi
if ! dry "$tmp/dry6" | grep -qE '^\| profile_'; then
    pass profile_not_by_default
else
    fail profile_not_by_default "the default stages ran a profile step"
fi
printf 'bf16: 7 kernels, 4.029 ms\nfp8 - bf16: kernels -0.900 ms; gemm -1.200\nfp8_current - bf16: kernels +0.100 ms; gemm -1.000\n' \
    >"$tmp/profile_summary.log"
expect profile_differences "fp8 - bf16: kernels -0.900 ms; gemm -1.200 / fp8_current - bf16: kernels +0.100 ms; gemm -1.000" \
    "$(profile_differences "$tmp/profile_summary.log")"
if [ "$(ls "$tmp/dry3" | wc -l)" -le 8 ] && [ -s "$tmp/dry3/summary.txt" ] && [ -s "$tmp/dry3/gpu_check_logs.tar.gz" ]; then
    pass logdir_holds_few_files
else
    fail logdir_holds_few_files "$(ls "$tmp/dry3")"
fi

# the whole run with no time budget: every step SKIPPED (budget), the table, summary.txt, the archive, RESULTS section
printf '%s\n' "$LATEST_HEADER" $'d48_fp8_over_bf16\t1.32\tx\tH100\te24f1a6\t2026-11-27\tthe old one' >"$tmp/run_latest.tsv"
cp "$tmp/run_latest.tsv" "$tmp/run_latest_before.tsv"
out=$(PATH="$tmp/gpu_bin:$PATH" GPU_CHECK_BUDGET=0 GPU_CHECK_RESULTS="$tmp/RESULTS.md" GPU_CHECK_LATEST="$tmp/run_latest.tsv" \
    bash "$script" --append-results "$tmp/run_logs" 2>&1)
rc=$?
# every stage skipped: nothing written, and the table says why
if cmp -s "$tmp/run_latest.tsv" "$tmp/run_latest_before.tsv" && [ ! -e "$tmp/run_logs/latest.tsv" ] &&
    printf '%s\n' "$out" | grep -qE '^\| latest_tsv_bench +\| \(nothing written\) +\| d12_b64_fp8_over_bf16 not written: bench_d12_b64_bf16 SKIPPED \(budget\);' &&
    printf '%s\n' "$out" | grep -qE '^\| latest_tsv_dev +\| \(nothing written\) +\| block_cast_over_copy not written: fp8_block_quantize SKIPPED \(budget\) +\|'; then
    pass skipped_stages_write_no_figure
else
    fail skipped_stages_write_no_figure "$(cat "$tmp/run_latest.tsv") / $out"
fi
expect run_exit_status 0 "$rc"
if printf '%s\n' "$out" | grep -q "^GPU: NVIDIA H100 80GB HBM3, driver 550.54.15" &&
    printf '%s\n' "$out" | grep -qE '^\| build +\| SKIPPED \(budget\)' &&
    printf '%s\n' "$out" | grep -qE '^\| bench_d48_fp8 +\| SKIPPED \(budget\) +\| - +\|' &&
    printf '%s\n' "$out" | grep -qE '^\| nccl_1rank +\| SKIPPED \(budget\) +\| - +\|' &&
    printf '%s\n' "$out" | grep -qE '^command: .*gpu_check.sh --append-results'; then
    pass run_table
else
    fail run_table "$out"
fi
if [ -f "$tmp/run_logs/summary.txt" ] && grep -qE '^\| nccl_1rank +\|' "$tmp/run_logs/summary.txt" &&
    tar -tzf "$tmp/run_logs/gpu_check_logs.tar.gz" | grep -q '^./bench_d12_bf16.log$'; then
    pass run_summary_and_archive
else
    fail run_summary_and_archive "no summary.txt with the table, or no archive with the step logs"
fi
if grep -q "^## .* — GPU check on NVIDIA H100 80GB HBM3" "$tmp/RESULTS.md" 2>/dev/null &&
    [ "$(grep -c '^| ' "$tmp/RESULTS.md")" -eq "$(grep -c '^| ' "$tmp/run_logs/summary.txt")" ]; then
    pass run_append_results
else
    fail run_append_results "$(cat "$tmp/RESULTS.md" 2>/dev/null)"
fi
if [ ! -e "$tmp/make_called" ]; then pass run_without_budget_builds_nothing; else fail run_without_budget_builds_nothing "make ran"; fi

# ---------------------------------------------------------------------------------------------------------------------
# the sanitize stage with a stand-in compute-sanitizer: racecheck's reports inside cuBLASLt/cuDNN kernels leave the step
# OK and are counted apart; one in our kernel fails it and names the kernel; a memcheck error fails memcheck
cat >"$tmp/race_library.log" <<'EOF'
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at nvjet_sm90_tst_112x64_64x9_1x2_h_bz_bias_TNN+0x1a30
=========     and Read access at nvjet_sm90_tst_112x64_64x9_1x2_h_bz_bias_TNN+0x1b80 [64 hazards]
========= Error: Race reported between Write access at cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma+0x30
=========     and Read access at cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma+0x80 [2 hazards]
========= ERROR SUMMARY: 2 errors
EOF
cat >"$tmp/race_ours.log" <<'EOF'
========= Error: Race reported between Write access at fp8_block_cast_2d_kernel(const __nv_bfloat16 *, int)+0x1a30 in /w/fp8/block_quantize.cuh:210
=========     and Read access at fp8_block_cast_2d_kernel(const __nv_bfloat16 *, int)+0x1b80 in /w/fp8/block_quantize.cuh:230 [128 hazards]
========= Error: Race reported between Write access at nvjet_sm90_tst_112x64_64x9_1x2_h_bz_bias_TNN+0x1a30
=========     and Read access at nvjet_sm90_tst_112x64_64x9_1x2_h_bz_bias_TNN+0x1b80 [64 hazards]
========= Error: Race reported between Read access at layernorm_forward_kernel<768>+0x10 in /w/llmc/layernorm.cuh:40
=========     and Write access at layernorm_forward_kernel<768>+0x20 in /w/llmc/layernorm.cuh:44 [1 hazards]
========= Error: Race reported between Write access at fp8_block_cast_2d_kernel(const __nv_bfloat16 *, int)+0x1c00 in /w/fp8/block_quantize.cuh:212
=========     and Read access at fp8_block_cast_2d_kernel(const __nv_bfloat16 *, int)+0x1d00 in /w/fp8/block_quantize.cuh:232 [4 hazards]
========= ERROR SUMMARY: 4 errors
EOF
expect racecheck_hazards_library "0 2 -" "$(racecheck_hazards "$tmp/race_library.log")"
expect racecheck_hazards_ours "3 1 fp8_block_cast_2d_kernel,layernorm_forward_kernel<768>" "$(racecheck_hazards "$tmp/race_ours.log")"
expect racecheck_hazards_missing_log "0 0 -" "$(racecheck_hazards "$tmp/no_such.log")"
mkdir -p "$tmp/sanitizer_bin"
cat >"$tmp/sanitizer_bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
echo "sanitizer: $*"
case "$2" in
    racecheck) cat "$RACE_LOG" ;;
    memcheck) echo "========= ERROR SUMMARY: ${MEMCHECK_ERRORS:-0} errors" ;;
esac
EOF
chmod +x "$tmp/sanitizer_bin/compute-sanitizer"
sanitize_run() {  # sanitize_run NAME RACE_LOG MEMCHECK_ERRORS: stage_sanitize alone, its table in $tmp/NAME.table
    (
        # shellcheck disable=SC2034 # globals of the sourced stage
        WORK="$tmp/$1" LOGDIR="$tmp/$1_out" DEADLINE=$((SECONDS + 120)) ANY_FAILED=0 ARCHIVE_OVER=0 STARTED=now
        # shellcheck disable=SC2034
        GPU_NAME=cpu GPU_DRIVER=- GPU_MEMORY=- COMMIT=- COMMAND_LINE=test STAGES=sanitize DRY_RUN=0 EXTRA=()
        ROW_STEP=() ROW_RESULT=() ROW_KEY=()
        mkdir -p "$WORK" "$LOGDIR"
        PATH="$tmp/sanitizer_bin:$PATH" RACE_LOG=$2 MEMCHECK_ERRORS=$3 stage_sanitize 2>/dev/null
        print_table
        exit "$ANY_FAILED"
    ) >"$tmp/$1.table"
}
sanitize_run sanitize_library "$tmp/race_library.log" 0
rc=$?
library_key='2 sanitizer errors: 0 hazard reports in our kernels \(-\), 2 inside cuBLASLt/cuDNN.s'
uninstrumented='--kernel-name-exclude kns=xmma --kernel-name-exclude kns=cutlass --kernel-name-exclude kns=cublas --kernel-name-exclude kns=cudnn --kernel-name-exclude kns=sdpa'
if [ "$rc" -eq 0 ] && grep -qE '^\| memcheck +\| OK .*\| 0 sanitizer errors +\|' "$tmp/sanitize_library.table" &&
    grep -qE "^\| racecheck_fp8 +\| OK .*\| $library_key +\|" "$tmp/sanitize_library.table" &&
    grep -qE "^\| racecheck_others +\| OK .*\| $library_key +\|" "$tmp/sanitize_library.table" &&
    grep -qx "sanitizer: --tool racecheck $uninstrumented ./test_gpt_fp8 fp8 --skip medium" \
        "$tmp/sanitize_library/racecheck_fp8.log" &&
    grep -qx "sanitizer: --tool racecheck $uninstrumented ./test_gpt_fp8 --skip medium --skip fp8" \
        "$tmp/sanitize_library/racecheck_others.log" &&
    grep -qx 'sanitizer: --tool memcheck ./test_gpt_fp8' "$tmp/sanitize_library/memcheck.log"; then
    pass sanitize_library_races_counted_apart
else
    fail sanitize_library_races_counted_apart "rc $rc: $(cat "$tmp/sanitize_library.table")"
fi
sanitize_run sanitize_ours "$tmp/race_ours.log" 3
rc=$?
if [ "$rc" -eq 1 ] && grep -qE '^\| memcheck +\| FAILED \(memory errors\) +\| 3 sanitizer errors' "$tmp/sanitize_ours.table" &&
    grep -qE '^\| racecheck_fp8 +\| FAILED \(races in our kernels\) +\| 4 sanitizer errors: 3 hazard reports in our kernels \(fp8_block_cast_2d_kernel,layernorm_forward_kernel<768>\), 1 inside' \
        "$tmp/sanitize_ours.table" &&
    grep -qE '^\| racecheck_others +\| FAILED \(races in our kernels\) ' "$tmp/sanitize_ours.table"; then
    pass sanitize_our_races_fail
else
    fail sanitize_our_races_fail "rc $rc: $(cat "$tmp/sanitize_ours.table")"
fi

# ---------------------------------------------------------------------------------------------------------------------
# the profile stage run for real without a GPU: a stand-in trainer prints progress lines (its step time: 100 ms for
# bf16, 80 for fp8); a stand-in ncu checks that it was asked for one step with collection off and writes a report, and
# on --import prints a CSV laid out as ncu's raw page with that run's kernels. Then the same with an ncu whose step was
# never reached (no report), and with no ncu at all.
cat >"$tmp/fake_trainer" <<'EOF'
#!/usr/bin/env bash
[ -n "${FAKE_TRAINER_ARGS:-}" ] && echo "$*" >>"$FAKE_TRAINER_ARGS"
if [ -n "${FAKE_SMI_STARTED:-}" ] && [[ " $* " != *" -estimate "* ]]; then  # wait (10 s at most) until the stand-in
    # clock sampler has written its samples (a memory estimate is not sampled)
    for _ in $(seq 1 100); do [ -e "$FAKE_SMI_STARTED" ] && break; sleep 0.1; done
    rm -f "$FAKE_SMI_STARTED"
fi
ms=100
[[ " $* " == *" -precision fp8 "* ]] && ms=80
[[ " $* " == *" -fp8_recipe blockwise "* ]] && ms=125
[[ " $* " == *" -fp8_attention 1 "* ]] && ms=64
# FAKE_TRAINER_RULES: lines "ACTION<tab>GLOB", the last whose GLOB matches " ARGS " wins: ACTION a step time in ms,
# refuse (the GPU trainer's one-line refusal of blockwise at a width off 128) or fail (a crash after its step lines)
if [ -n "${FAKE_TRAINER_RULES:-}" ]; then
    while IFS=$'\t' read -r rule glob; do
        # shellcheck disable=SC2053 # GLOB is a pattern
        [[ " $* " == $glob ]] && ms=$rule
    done <"$FAKE_TRAINER_RULES"
fi
case $ms in
    refuse)
        echo "error: -fp8_recipe blockwise on the GPU needs every FP8 GEMM to reduce over a multiple of 128, as cuBLASLt's block-scaled GEMM with a partial last block along k is unverified (dev/cuda/fp8_block_gemm checks it): qkv's fprop reduces over C = 1600 (-C 1600)" >&2
        exit 1
        ;;
    fail) crash=1; ms=90 ;;
esac
for i in $(seq 1 15); do
    printf 'step %4d/15 | loss 5.000000 | norm 1.0000 | lr 3.00e-04 | %d.00 ms | 655360 tok/s | mfu 30.0%% | peak memory 20.00 GiB\n' "$i" "$ms"
done
if [[ " $* " == *" -idle_step 8 "* ]]; then
    printf 'idle: step 8: the GPU idle 0.%d ms of a %d.500 ms step (busy %d.%d ms: 100 kernels, 2 copies, 1 memsets)\n' \
        "$ms" "$ms" "$ms" "$((500 - ms))"
fi
if [ -n "${crash:-}" ]; then echo "stand-in trainer: CUDA error: an illegal memory access was encountered" >&2; exit 1; fi
EOF
cat >"$tmp/fake_ncu" <<'EOF'
#!/usr/bin/env bash
if [ "$1" = --import ]; then
    # every kernel at 1980 MHz under ncu (elapsed SM cycles per second, in ncu's base unit)
    echo '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","sm__cycles_elapsed.avg.per_second"'
    echo '"","","","","","","","","","","","nsecond","cycle/second"'
    gemm=60,000,000
    case $2 in
        *fp8*)
            gemm=40,000,000
            echo '"1","1","t","h","void fp8_cast_transpose_amax_kernel<(bool)0>(float *)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","9,000,000","1,980,000,000"'
            ;;
    esac
    echo '"0","1","t","h","nvjet_sm90_tst_112x64_64x9_1x2_h_bz_bias_TNN","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","'"$gemm"'","1,980,000,000"'
    echo '"2","1","t","h","void layernorm_forward_kernel<(int)768>(float *)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","20,000,000","1,980,000,000"'
    exit 0
fi
report="" args=" $* "
while [ $# -gt 0 ]; do [ "$1" = --export ] && report=$2; shift; done
if [[ $args != *" --profile-from-start off "* ]] || [[ $args != *" -profile_step 3 "* ]]; then
    echo "stand-in ncu: not asked for one step"
    exit 1
fi
if [ -n "${FAKE_NCU_NO_REPORT:-}" ]; then echo "==PROF== No kernels were profiled."; exit 0; fi
echo report >"$report.ncu-rep"
EOF
chmod +x "$tmp/fake_trainer" "$tmp/fake_ncu"
profile_run() {  # profile_run NAME NCU: stage_profile alone (bf16 and fp8), its table in $tmp/NAME.table
    (
        # shellcheck disable=SC2034 # globals of the sourced stage
        WORK="$tmp/$1" LOGDIR="$tmp/$1_out" DEADLINE=$((SECONDS + 120)) ANY_FAILED=0 ARCHIVE_OVER=0 STARTED=now
        # shellcheck disable=SC2034
        GPU_NAME=cpu GPU_DRIVER=- GPU_MEMORY=- COMMIT=- COMMAND_LINE=test STAGES=profile DRY_RUN=0 EXTRA=() SKIP=5
        ROW_STEP=() ROW_RESULT=() ROW_KEY=() DATA_FLAGS=(-i train.bin) LATEST_TSV="$tmp/$1_latest.tsv"
        mkdir -p "$WORK" "$LOGDIR"
        NCU=$2 PROFILE_TRAINER="$tmp/fake_trainer" PROFILE_RUNS="bf16 fp8" stage_profile 2>/dev/null
        print_table
        exit "$ANY_FAILED"
    ) >"$tmp/$1.table"
}
profile_run profile_fake "$tmp/fake_ncu"
rc=$?
table=$(cat "$tmp/profile_fake.table")
if [ "$rc" -eq 0 ] && printf '%s\n' "$table" | grep -qE '^\| profile_time_fp8 +\| OK .*\| 80\.00 ms/step' &&
    printf '%s\n' "$table" | grep -qE '^\| profile_bf16 +\| OK .*\| 2 kernels, 80\.000 ms at 1980 MHz of 100\.000 ms/step; gemm 60\.000, layernorm 20\.000 +\|' &&
    printf '%s\n' "$table" | grep -qE '^\| profile_fp8 +\| OK .*\| 3 kernels, 69\.000 ms at 1980 MHz of 80\.000 ms/step; gemm 40\.000, layernorm 20\.000, fp8 cast 9\.000 +\|' &&
    printf '%s\n' "$table" | grep -qE '^\| profile_summary +\| OK .*\| fp8 - bf16: kernels -11\.000 ms, step -20\.000 ms; gemm -20\.000, fp8 cast \+9\.000, layernorm \+0\.000 +\|' &&
    grep -qxF '| outside kernels (step - sum) | 20.000 | 11.000 |  |' "$tmp/profile_fake_out/profile_step.md" &&
    [ -s "$tmp/profile_fake/profile_fp8.ncu-rep" ]; then
    pass profile_stage_with_a_stand_in_ncu
else
    fail profile_stage_with_a_stand_in_ncu "rc $rc: $table / $(cat "$tmp/profile_fake_out/profile_step.md" 2>/dev/null)"
fi
# -idle_step's run beside each: its line in the table, and at the default shape the bf16 and fp8 ones in latest.tsv
if printf '%s\n' "$table" | grep -qE '^\| profile_idle_bf16 +\| OK .*\| 0\.100 ms idle of a 100\.500 ms step \(busy 100\.400 ms: 100 kernels, 2 copies, 1 memsets\) +\|' &&
    printf '%s\n' "$table" | grep -qE '^\| latest_tsv_profile +\| OK +\| gpu_idle_ms_bf16 0\.100; gpu_idle_ms_fp8 0\.80 +\|' &&
    [ "$(awk -F '\t' '$1 == "gpu_idle_ms_fp8" { print $2 " " $3 }' "$tmp/profile_fake_latest.tsv")" = "0.80 ms" ] &&
    [ "$(awk -F '\t' '$1 == "gpu_idle_ms_bf16" && $7 ~ /-x 8 -idle_step 8/ { print $2 }' "$tmp/profile_fake_latest.tsv")" = 0.100 ]; then
    pass profile_stage_gpu_idle_rows
else
    fail profile_stage_gpu_idle_rows "$table / $(cat "$tmp/profile_fake_latest.tsv" 2>/dev/null)"
fi
expect idle_key "0.412 78.903 busy 78.491 ms: 1842 kernels, 6 copies, 3 memsets" "$(idle_key <(printf 'step 8/8 | x\nidle: step 8: the GPU idle 0.412 ms of a 78.903 ms step (busy 78.491 ms: 1842 kernels, 6 copies, 3 memsets)\n'))"
FAKE_NCU_NO_REPORT=1 profile_run profile_unreached "$tmp/fake_ncu"
rc=$?
if [ "$rc" -eq 1 ] && grep -qE '^\| profile_fp8 +\| FAILED \(rc 1.*ncu wrote no report: was step 3 reached' "$tmp/profile_unreached.table" &&
    ! grep -qE '^\| profile_summary ' "$tmp/profile_unreached.table" && [ ! -e "$tmp/profile_unreached_out/profile_step.md" ]; then
    pass profile_stage_fails_without_a_report
else
    fail profile_stage_fails_without_a_report "rc $rc: $(cat "$tmp/profile_unreached.table")"
fi
# PROFILE_V: the runs read the shards through links in a folder without the tokenizer, with -V and no -tk
mkdir -p "$tmp/vocab_data"
echo shard >"$tmp/vocab_data/train.bin"
echo shard >"$tmp/vocab_data/val.bin"
(
    # shellcheck disable=SC2034 # globals of the sourced stage
    WORK="$tmp/profile_vocab" LOGDIR="$tmp/profile_vocab_out" DEADLINE=$((SECONDS + 120)) ANY_FAILED=0 ARCHIVE_OVER=0
    # shellcheck disable=SC2034
    STARTED=now GPU_NAME=cpu GPU_DRIVER=- GPU_MEMORY=- COMMIT=- COMMAND_LINE=test STAGES=profile DRY_RUN=0 EXTRA=() SKIP=5
    ROW_STEP=() ROW_RESULT=() ROW_KEY=()
    DATA_FLAGS=(-i "$tmp/vocab_data/train.bin" -j "$tmp/vocab_data/val.bin" -tk "$tmp/vocab_data/tokenizer.bin")
    mkdir -p "$WORK" "$LOGDIR"
    FAKE_TRAINER_ARGS="$tmp/vocab_args" NCU="$tmp/fake_ncu" PROFILE_TRAINER="$tmp/fake_trainer" PROFILE_RUNS=bf16 \
        PROFILE_V=50257 stage_profile 2>/dev/null
    print_table
) >"$tmp/profile_vocab.table"
vocab_args=$(head -n 1 "$tmp/vocab_args" 2>/dev/null)
if [[ " $vocab_args " == *" -i $tmp/profile_vocab/shards_v50257/train.bin -j $tmp/profile_vocab/shards_v50257/val.bin -V 50257 "* ]] &&
    [[ " $vocab_args " != *" -tk "* ]] && [ "$(cat "$tmp/profile_vocab/shards_v50257/train.bin")" = shard ] &&
    [ ! -e "$tmp/profile_vocab/shards_v50257/tokenizer.bin" ] &&
    grep -qE '^\| profile_vocabulary .*-V 50257' "$tmp/profile_vocab.table"; then
    pass profile_stage_at_gpt2_vocabulary
else
    fail profile_stage_at_gpt2_vocabulary "args: $vocab_args / $(cat "$tmp/profile_vocab.table")"
fi
# the SM clock sampled while each run is timed: a stand-in nvidia-smi as an older driver's, which knows the reasons
# field by its old name only; asked to sample (-lms), it writes an idle and a busy line, then waits to be stopped (its
# process ids kept, to see that the stage stopped each)
mkdir -p "$tmp/smi_bin"
cat >"$tmp/smi_bin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
if [[ " $* " == *clocks_event_reasons* ]]; then echo 'Field "clocks_event_reasons.active" is not a valid field to query.'; exit 2; fi
if [[ " $* " == *" -lms "* ]]; then
    echo "$*" >>"$FAKE_SMI_ARGS"
    printf '0, 345, 1980, 70.00, 35, 0x0000000000000001\n99, 1800, 1980, 650.00, 61, 0x0000000000000004\n'
    echo $$ >>"$FAKE_SMI_ARGS.pids"
    touch "$FAKE_SMI_STARTED"
    exec sleep 30
fi
echo "0, 345, 1980, 70.00, 35, 0x0000000000000001"
EOF
chmod +x "$tmp/smi_bin/nvidia-smi"
PATH="$tmp/smi_bin:$PATH" FAKE_SMI_ARGS="$tmp/smi_args" FAKE_SMI_STARTED="$tmp/smi_started" \
    profile_run profile_clocks "$tmp/fake_ncu"
rc=$?
clocks_row='1 busy sample: SM clock mean 1800 MHz (1800..1800 of 1980), power mean 650 W, temperature max 61 C; clock held down by: power cap'
# the steps' 1800 MHz against ncu's 1980: each kernel at most 1.1 times its time, bf16 80 -> 88 ms of its 100 ms/step
# (at least 12 ms outside kernels), fp8 69 -> 75.9 ms of 80 (at least 4.1)
if [ "$rc" -eq 0 ] && [ "$(grep -cF "| $clocks_row " "$tmp/profile_clocks.table")" -eq 2 ] &&
    grep -qE '^\| profile_bf16 +\| OK .*\| 2 kernels, 80\.000 ms at 1980 MHz of 100\.000 ms/step at 1800 MHz, >= 12\.000 ms outside kernels; gemm' "$tmp/profile_clocks.table" &&
    grep -qE '^\| profile_fp8 +\| OK .*\| 3 kernels, 69\.000 ms at 1980 MHz of 80\.000 ms/step at 1800 MHz, >= 4\.100 ms outside kernels; gemm' "$tmp/profile_clocks.table" &&
    grep -qxF "| outside kernels, at least (step - that) | 12.000 | 4.100 |  |" "$tmp/profile_clocks_out/profile_step.md" &&
    grep -qE '^\| profile_clocks_bf16 +\| - ' "$tmp/profile_clocks.table" &&
    [ "$(grep -c -- '-lms 100' "$tmp/smi_args")" -eq 2 ] &&
    grep -q -- '--query-gpu=utilization.gpu,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active ' "$tmp/smi_args" &&
    [ -s "$tmp/profile_clocks/profile_clocks_fp8.csv" ] && [ "$(wc -l <"$tmp/smi_args.pids")" -eq 2 ] &&
    ! xargs -r kill -0 <"$tmp/smi_args.pids" 2>/dev/null; then  # both samplers stopped with their runs
    pass profile_stage_samples_the_clock
else
    fail profile_stage_samples_the_clock "rc $rc: $(cat "$tmp/profile_clocks.table") / $(cat "$tmp/smi_args" 2>/dev/null)"
fi
profile_run profile_no_ncu "$tmp/no_such_ncu"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -cE '^\| profile_(bf16|fp8) +\| SKIPPED \(no ncu\)' "$tmp/profile_no_ncu.table")" -eq 2 ] &&
    grep -qE '^\| profile_time_bf16 +\| OK .*100\.00 ms/step' "$tmp/profile_no_ncu.table"; then
    pass profile_stage_without_ncu_times_and_skips
else
    fail profile_stage_without_ncu_times_and_skips "rc $rc: $(cat "$tmp/profile_no_ncu.table")"
fi

# the sampler stopped the moment it started (a step skipped by the budget): until the job has exec'd nvidia-smi it is a
# copy of the shell, whose EXIT trap removes the step logs and whose SIGTERM handler may swallow the kill; 20 times
# over, the logs must stay and no sampler may be left running
(
    keep="$tmp/sampler_keep"
    mkdir -p "$keep" && echo log >"$keep/step.log"
    trap 'rm -rf "$keep"' EXIT  # as gpu_check's own trap on its step logs
    for _ in $(seq 1 20); do
        PATH="$tmp/smi_bin:$PATH" FAKE_SMI_ARGS="$tmp/smi_at_once" FAKE_SMI_STARTED="$tmp/smi_at_once_started" \
            clock_sampler_start "$keep/clocks.csv"
        clock_sampler_stop
    done
    [ -e "$keep/step.log" ] && echo kept
) >"$tmp/sampler_at_once.out" 2>&1
if [ "$(cat "$tmp/sampler_at_once.out")" = kept ] && [ ! -e "$tmp/sampler_keep" ] &&
    ! xargs -r kill -0 <"$tmp/smi_at_once.pids" 2>/dev/null; then
    pass clock_sampler_stopped_at_once
else
    fail clock_sampler_stopped_at_once "$(cat "$tmp/sampler_at_once.out") / left running: $(cat "$tmp/smi_at_once.pids" 2>/dev/null)"
fi

# the bench stage run for real with the stand-in trainer (as ./train_gpt_fp8): bench_stage NAME LATEST [VAR=VALUE...]
# runs stage_bench alone with those variables (EXTRA=WORDS: trainer flags after --), its table in $tmp/NAME.table, its
# figures into the file LATEST, its exit status ANY_FAILED
mkdir -p "$tmp/bench_dir"
ln -sf "$tmp/fake_trainer" "$tmp/bench_dir/train_gpt_fp8"
bench_stage() {
    local name=$1 latest=$2
    shift 2
    (
        cd "$tmp/bench_dir" || exit 1
        # shellcheck disable=SC2034 # globals of the sourced stage
        WORK="$tmp/$name" LOGDIR="$tmp/${name}_out" DEADLINE=$((SECONDS + 300)) ANY_FAILED=0 ARCHIVE_OVER=0 STARTED=now
        # shellcheck disable=SC2034
        GPU_NAME="NVIDIA H100 80GB HBM3" GPU_DRIVER=- GPU_MEMORY=- COMMIT=- STAGES=bench DRY_RUN=0 EXTRA=() SKIP=5
        # shellcheck disable=SC2034
        ROW_STEP=() ROW_RESULT=() ROW_KEY=() DATA_FLAGS=(-i train.bin) BENCH_STEPS=15 BENCH_B=8
        # shellcheck disable=SC2034
        LATEST_TSV=$latest LATEST_COMMIT=abc1234 COMMAND_LINE="scripts/gpu_check.sh --only bench out"
        local assignment
        for assignment in "$@"; do
            # shellcheck disable=SC2206 # the flags are words
            case $assignment in EXTRA=*) EXTRA=(${assignment#EXTRA=}) ;; *) export "${assignment?}" ;; esac
        done
        mkdir -p "$WORK" "$LOGDIR"
        stage_bench 2>/dev/null
        print_table
        exit "$ANY_FAILED"
    ) >"$tmp/$name.table"
}
# seed_latest FILE: the header, a row no stage writes, and an older d48_fp8_over_bf16
seed_latest() {
    printf '%s\n' "$LATEST_HEADER" $'other_figure\t0.5\tx\tH200\t1111111\t2026-01-01\tby hand' \
        $'d48_fp8_over_bf16\t1.32\tx\tH100\te24f1a6\t2026-11-27\tthe old one' >"$1"
}
row_of() { awk -F '\t' -v name="$2" '$1 == name' "$1"; }  # row_of FILE NAME: NAME's row
today=$(date -u +%Y-%m-%d)
# each row has its step time and the SM clock the run was sampled at (the stand-in nvidia-smi); fp8's 80 ms against
# bf16's 100 ms is 1.25x, blockwise's 125 ms 0.80x, FP8 attention's 64 ms (d12 B 64 and d48 only) 1.56x; every ratio
# goes into results/latest.tsv: d48's replaced where it was, the new ones added last, the header and the other row as
# they were
seed_latest "$tmp/bench_latest.tsv"
bench_stage bench_stage "$tmp/bench_latest.tsv" PATH="$tmp/smi_bin:$PATH" FAKE_SMI_ARGS="$tmp/bench_smi" \
    FAKE_SMI_STARTED="$tmp/bench_smi_started"
rc=$?
clock='SM clock 1800 of 1980 MHz \(power cap\)'  # as an ERE
if [ "$rc" -eq 0 ] && [ "$(grep -cE "^\| bench_d(12|24|48)_.*, $clock +\|\$" "$tmp/bench_stage.table")" -eq 13 ] &&
    grep -qE "^\| bench_d12_bf16 +\| OK .*\| 100\.00 ms/step, .*, $clock" "$tmp/bench_stage.table" &&
    grep -qE "^\| bench_d24_fp8 +\| OK .*\| 80\.00 ms/step, .*, 1\.25x vs bf16, $clock" "$tmp/bench_stage.table" &&
    grep -qE "^\| bench_d12_fp8_blockwise +\| OK .*0\.80x vs bf16, 0\.64x vs fp8 delayed, $clock" "$tmp/bench_stage.table" &&
    grep -qE "^\| bench_d12_b64_fp8_blockwise +\| OK .*0\.80x vs bf16, 0\.64x vs fp8 delayed, $clock" "$tmp/bench_stage.table" &&
    grep -qE "^\| bench_d48_fp8_blockwise +\| OK .*0\.80x vs bf16, 0\.64x vs fp8 delayed, $clock" "$tmp/bench_stage.table" &&
    ! grep -qE '^\| bench_d24_fp8_blockwise ' "$tmp/bench_stage.table" &&
    grep -qE "^\| bench_d12_b64_fp8_attention +\| OK .*64\.00 ms/step, .*1\.56x vs bf16, 1\.25x vs fp8 delayed, $clock" \
        "$tmp/bench_stage.table" &&
    grep -qE "^\| bench_d48_fp8_attention +\| OK .*1\.56x vs bf16, 1\.25x vs fp8 delayed, $clock" "$tmp/bench_stage.table" &&
    ! grep -qE '^\| bench_d(12|24)_fp8_attention ' "$tmp/bench_stage.table" &&
    [ "$(wc -l <"$tmp/bench_smi.pids")" -eq 13 ] && ! xargs -r kill -0 <"$tmp/bench_smi.pids" 2>/dev/null; then
    pass bench_stage_samples_the_clock
else
    fail bench_stage_samples_the_clock "rc $rc: $(cat "$tmp/bench_stage.table")"
fi
# the B 64 runs and d48's blockwise run: their commands
b64_cmd=$(head -n 1 "$tmp/bench_stage/bench_d12_b64_fp8_blockwise.log")
d48_blockwise_cmd=$(head -n 1 "$tmp/bench_stage/bench_d48_fp8_blockwise.log")
if [ "$b64_cmd" = '$ ./train_gpt_fp8 -i train.bin -e d12 -b 64 -t 1024 -x 15 -v 0 -s 0 -seed 1337 -precision fp8 -fp8_recipe blockwise -fp8_diag_every 0' ] &&
    [ "$d48_blockwise_cmd" = '$ ./train_gpt_fp8 -i train.bin -e d48 -b 8 -d 32768 -t 1024 -x 15 -v 0 -s 0 -seed 1337 -precision fp8 -fp8_recipe blockwise -fp8_diag_every 0' ]; then
    pass bench_stage_b64_and_d48_blockwise_commands
else
    fail bench_stage_b64_and_d48_blockwise_commands "$b64_cmd / $d48_blockwise_cmd"
fi
b64_command='./train_gpt_fp8 -i train.bin -e d12 -b 64 -t 1024 -x 15 -v 0 -s 0 -seed 1337 -precision bf16 -fp8_diag_every 0, then the same with -precision fp8 in place of -precision bf16: 100.00 / 80.00 ms/step (means of steps 6-15), the ratio of the two, measured in one call: the bench stage of scripts/gpu_check.sh --only bench out'
want_rows=$(printf '%s\n' "$LATEST_HEADER" $'other_figure\t0.5\tx\tH200\t1111111\t2026-01-01\tby hand' \
    "d48_fp8_over_bf16	1.250	x	NVIDIA H100 80GB HBM3	abc1234	$today" \
    "d12_b64_fp8_over_bf16	1.250	x	NVIDIA H100 80GB HBM3	abc1234	$today" \
    "blockwise_d12_b64_over_bf16	0.800	x	NVIDIA H100 80GB HBM3	abc1234	$today" \
    "blockwise_d48_over_bf16	0.800	x	NVIDIA H100 80GB HBM3	abc1234	$today" \
    "fp8_attention_d12_b64_over_bf16	1.562	x	NVIDIA H100 80GB HBM3	abc1234	$today" \
    "fp8_attention_d48_over_bf16	1.562	x	NVIDIA H100 80GB HBM3	abc1234	$today")
got_rows=$(awk -F '\t' 'NR <= 2 { print; next } { print $1 "\t" $2 "\t" $3 "\t" $4 "\t" $5 "\t" $6 }' "$tmp/bench_latest.tsv")
if [ "$got_rows" = "$want_rows" ] && [ "$(row_of "$tmp/bench_latest.tsv" d12_b64_fp8_over_bf16 | cut -f 7)" = "$b64_command" ] &&
    [[ $(row_of "$tmp/bench_latest.tsv" blockwise_d48_over_bf16 | cut -f 7) == "./train_gpt_fp8 -i train.bin -e d48 -b 8 -d 32768 "*"-precision bf16 -fp8_diag_every 0, then the same with -precision fp8 -fp8_recipe blockwise in place of -precision bf16: 100.00 / 125.00 ms/step"* ]] &&
    grep -qE '^\| latest_tsv_bench +\| OK +\| d12_b64_fp8_over_bf16 1\.250; d48_fp8_over_bf16 1\.250; blockwise_d12_b64_over_bf16 0\.800; blockwise_d48_over_bf16 0\.800; fp8_attention_d12_b64_over_bf16 1\.562; fp8_attention_d48_over_bf16 1\.562 +\|' \
        "$tmp/bench_stage.table" && cmp -s "$tmp/bench_latest.tsv" "$tmp/bench_stage_out/latest.tsv" &&
    [ -z "$(find "$tmp" -maxdepth 1 -name 'bench_latest.tsv.tmp.*')" ]; then
    pass bench_stage_writes_its_figures
else
    fail bench_stage_writes_its_figures "$(cat "$tmp/bench_latest.tsv") / $(grep latest_tsv "$tmp/bench_stage.table")"
fi
# d12 at B 64 at other step times than at B 8 (each figure from its own runs); d48 FP8 failing and blockwise refused
# at d48: no d48 figure written (the old row kept byte for byte), the refusal SKIPPED with its line, the failure FAILED
printf '%s\t%s\n' 400 '* -b 64 * -precision bf16 *' 250 '* -b 64 * -precision fp8 *' 320 '* -b 64 * -fp8_recipe blockwise *' \
    fail '* -e d48 * -precision fp8 -fp8_diag_every *' refuse '* -e d48 * -fp8_recipe blockwise *' >"$tmp/rules_fail"
seed_latest "$tmp/bench_fail_latest.tsv"
old_d48=$(row_of "$tmp/bench_fail_latest.tsv" d48_fp8_over_bf16)
bench_stage bench_fail "$tmp/bench_fail_latest.tsv" FAKE_TRAINER_RULES="$tmp/rules_fail"
rc=$?
if [ "$rc" -eq 1 ] && grep -qE '^\| bench_d48_fp8 +\| FAILED \(rc 1' "$tmp/bench_fail.table" &&
    grep -qE "^\| bench_d48_fp8_blockwise +\| SKIPPED \(refused\) +\| -fp8_recipe blockwise on the GPU needs every FP8 GEMM to reduce over a multiple of 128, .*: qkv's fprop reduces over C = 1600 \(-C 1600\) +\|" \
        "$tmp/bench_fail.table" &&
    [ "$(row_of "$tmp/bench_fail_latest.tsv" d48_fp8_over_bf16)" = "$old_d48" ] &&
    [ -z "$(row_of "$tmp/bench_fail_latest.tsv" blockwise_d48_over_bf16)" ] &&
    [ "$(row_of "$tmp/bench_fail_latest.tsv" d12_b64_fp8_over_bf16 | cut -f 2)" = 1.600 ] &&
    [ "$(row_of "$tmp/bench_fail_latest.tsv" blockwise_d12_b64_over_bf16 | cut -f 2)" = 1.250 ] &&
    [ "$(wc -l <"$tmp/bench_fail_latest.tsv")" -eq 7 ] &&
    grep -qE '^\| latest_tsv_bench +\| OK +\| d12_b64_fp8_over_bf16 1\.600; d48_fp8_over_bf16 not written: bench_d48_fp8 FAILED \(rc 1, [0-9]+s\); blockwise_d12_b64_over_bf16 1\.250; blockwise_d48_over_bf16 not written: bench_d48_fp8_blockwise refused by the trainer; fp8_attention_d12_b64_over_bf16 1\.600; fp8_attention_d48_over_bf16 1\.562 +\|' \
        "$tmp/bench_fail.table"; then
    pass bench_stage_failed_or_refused_runs_write_nothing
else
    fail bench_stage_failed_or_refused_runs_write_nothing "rc $rc: $(cat "$tmp/bench_fail.table") / $(cat "$tmp/bench_fail_latest.tsv")"
fi
# the refusal alone is not a failure; with BENCH_B 64 the d12 runs are the B 64 ones (no second set; d48, with no
# memory estimate from the stand-in, at B 64 too)
printf '%s\t%s\n' 400 '* -b 64 * -precision bf16 *' 250 '* -b 64 * -precision fp8 *' \
    refuse '* -e d48 * -fp8_recipe blockwise *' >"$tmp/rules_refuse"
seed_latest "$tmp/bench_refuse_latest.tsv"
bench_stage bench_refuse "$tmp/bench_refuse_latest.tsv" FAKE_TRAINER_RULES="$tmp/rules_refuse" BENCH_B=64
rc=$?
if [ "$rc" -eq 0 ] && grep -qE '^\| bench_d48_fp8_blockwise +\| SKIPPED \(refused\) ' "$tmp/bench_refuse.table" &&
    ! grep -qE '^\| bench_d12_b64_' "$tmp/bench_refuse.table" &&
    [ "$(row_of "$tmp/bench_refuse_latest.tsv" d12_b64_fp8_over_bf16 | cut -f 2)" = 1.600 ] &&
    [[ $(row_of "$tmp/bench_refuse_latest.tsv" d12_b64_fp8_over_bf16 | cut -f 7) == *" -e d12 -b 64 "* ]] &&
    [ "$(row_of "$tmp/bench_refuse_latest.tsv" d48_fp8_over_bf16 | cut -f 2)" = 1.600 ] &&
    [ -z "$(row_of "$tmp/bench_refuse_latest.tsv" blockwise_d48_over_bf16)" ]; then
    pass bench_stage_refusal_is_not_a_failure
else
    fail bench_stage_refusal_is_not_a_failure "rc $rc: $(cat "$tmp/bench_refuse.table") / $(cat "$tmp/bench_refuse_latest.tsv")"
fi
# trainer flags after --: the runs are not the shapes the names say; nothing written, the file as it was
seed_latest "$tmp/bench_extra_latest.tsv"
cp "$tmp/bench_extra_latest.tsv" "$tmp/bench_extra_before.tsv"
bench_stage bench_extra "$tmp/bench_extra_latest.tsv" "EXTRA=-fp8_margin 1"
rc=$?
if [ "$rc" -eq 0 ] && cmp -s "$tmp/bench_extra_latest.tsv" "$tmp/bench_extra_before.tsv" &&
    grep -qE '^\| latest_tsv_bench +\| \(nothing written\) +\| d12_b64_fp8_over_bf16 not written: trainer flags after -- \(-fp8_margin 1\);' \
        "$tmp/bench_extra.table" && [ ! -e "$tmp/bench_extra_out/latest.tsv" ]; then
    pass bench_stage_extra_flags_write_nothing
else
    fail bench_stage_extra_flags_write_nothing "rc $rc: $(cat "$tmp/bench_extra.table")"
fi

# the dev stage's block_cast_over_copy, from a stand-in dev/cuda/fp8_block_quantize (FAKE_BLOCK_RC its exit status,
# FAKE_BLOCK_LINE 0 to leave its last line out): written only when the run passed and printed the line
mkdir -p "$tmp/dev_dir/dev/cuda"
cat >"$tmp/dev_dir/dev/cuda/fp8_block_quantize" <<'FAKE'
#!/usr/bin/env bash
echo "PASS test_edge_values"
echo "| w 4800 x 1600 | blockwise 128x128 tiles + transpose | 2100.0 | 2900.0 | 0.72 |"
[ "${FAKE_BLOCK_LINE:-1}" = 1 ] &&
    echo "block_cast_over_copy 0.72 (the slowest cast's fraction of a device copy's bandwidth; target 0.80): activations 0.81, weights 0.72"
echo "fp8_block_quantize: 7 passed, ${FAKE_BLOCK_RC:-0} failed"
exit "${FAKE_BLOCK_RC:-0}"
FAKE
chmod +x "$tmp/dev_dir/dev/cuda/fp8_block_quantize"
dev_stage() {  # dev_stage NAME LATEST [VAR=VALUE...]: stage_dev alone with fp8_block_quantize only, as bench_stage
    local name=$1 latest=$2
    shift 2
    (
        cd "$tmp/dev_dir" || exit 1
        # shellcheck disable=SC2034 # globals of the sourced stage
        WORK="$tmp/$name" LOGDIR="$tmp/${name}_out" DEADLINE=$((SECONDS + 300)) ANY_FAILED=0 ARCHIVE_OVER=0 STARTED=now
        # shellcheck disable=SC2034
        GPU_NAME="NVIDIA H100 80GB HBM3" GPU_DRIVER=- GPU_MEMORY=- COMMIT=- STAGES=dev DRY_RUN=0 EXTRA=()
        # shellcheck disable=SC2034
        ROW_STEP=() ROW_RESULT=() ROW_KEY=() DEV_PROGRAMS=fp8_block_quantize CUDNN_PROGRAMS=""
        # shellcheck disable=SC2034
        LATEST_TSV=$latest LATEST_COMMIT=abc1234-dirty COMMAND_LINE="scripts/gpu_check.sh --only dev out"
        local assignment
        for assignment in "$@"; do export "${assignment?}"; done
        mkdir -p "$WORK" "$LOGDIR"
        stage_dev 2>/dev/null
        print_table
        exit "$ANY_FAILED"
    ) >"$tmp/$name.table"
}
seed_latest "$tmp/dev_latest.tsv"
dev_stage dev_ok "$tmp/dev_latest.tsv"
rc=$?
dev_row="block_cast_over_copy	0.72	x	NVIDIA H100 80GB HBM3	abc1234-dirty	$today	./dev/cuda/fp8_block_quantize: the slowest block cast's GB/s over a device-to-device copy's of the same tensor, both timed in that run (activations 0.81, weights 0.72); the dev stage of scripts/gpu_check.sh --only dev out"
if [ "$rc" -eq 0 ] && [ "$(tail -n 1 "$tmp/dev_latest.tsv")" = "$dev_row" ] && [ "$(wc -l <"$tmp/dev_latest.tsv")" -eq 4 ] &&
    grep -qE "^\| block_cast_over_copy +\| \(in fp8_block_quantize\) +\| 0\.72 of a device copy's bandwidth, the slowest block cast \(activations 0\.81, weights 0\.72\) +\|" \
        "$tmp/dev_ok.table" && grep -qE '^\| latest_tsv_dev +\| OK +\| block_cast_over_copy 0\.72 +\|' "$tmp/dev_ok.table"; then
    pass dev_stage_writes_block_cast_over_copy
else
    fail dev_stage_writes_block_cast_over_copy "rc $rc: $(cat "$tmp/dev_ok.table") / $(cat "$tmp/dev_latest.tsv")"
fi
cp "$tmp/dev_latest.tsv" "$tmp/dev_before.tsv"
dev_stage dev_failed "$tmp/dev_latest.tsv" FAKE_BLOCK_RC=1
rc=$?
dev_stage dev_no_line "$tmp/dev_latest.tsv" FAKE_BLOCK_LINE=0
rc2=$?
if [ "$rc" -eq 1 ] && [ "$rc2" -eq 0 ] && cmp -s "$tmp/dev_latest.tsv" "$tmp/dev_before.tsv" &&
    grep -qE '^\| latest_tsv_dev +\| \(nothing written\) +\| block_cast_over_copy not written: fp8_block_quantize FAILED \(rc 1, [0-9]+s\) +\|' \
        "$tmp/dev_failed.table" &&
    grep -qE '^\| latest_tsv_dev +\| \(nothing written\) +\| block_cast_over_copy not written: fp8_block_quantize printed no block_cast_over_copy line +\|' \
        "$tmp/dev_no_line.table"; then
    pass dev_stage_failed_run_writes_nothing
else
    fail dev_stage_failed_run_writes_nothing "rc $rc / $rc2: $(cat "$tmp/dev_failed.table" "$tmp/dev_no_line.table")"
fi

# ---------------------------------------------------------------------------------------------------------------------
# the xcheck stage run for real on the CPU, the CPU trainer standing in for the GPU's: every recipe agrees; then a
# "GPU trainer" whose val loss of step 5 is 1% off, with delayed scaling alone (the failure path is the same in
# every recipe, and each recipe's pair of runs costs CI time): the step fails, naming the step and the quantity.
# Every run trains 8 steps, not the stage's 20 (-x 8 as trainer flags after --, which the stage appends to each run):
# the same trainer on both sides agrees at any length, and 8 steps still hold the NaN step (4) and a val loss (5) after
# it; what this tests is the stage's runs, flags, models and table, and 20 steps took this suite 130 s of CI's 20 min.
if [ -x ./train_gpt_fp8_cpu ] && [ -x ./dev/compare_runs ] &&
    { [ -f data/tinyshakespeare/tiny_shakespeare_train.bin ] || ./dev/data/prepare_tinyshakespeare.sh >/dev/null; }; then
    xcheck_run() {  # xcheck_run NAME TRAINER [RECIPES]: stage_xcheck alone, its table in $tmp/NAME.table, its logs in $tmp/NAME
        (
            # shellcheck disable=SC2034 # globals of the sourced stage
            WORK="$tmp/$1" LOGDIR="$tmp/$1_out" DEADLINE=$((SECONDS + 300)) ANY_FAILED=0 ARCHIVE_OVER=0 STARTED=now
            # shellcheck disable=SC2034
            GPU_NAME=cpu GPU_DRIVER=- GPU_MEMORY=- COMMIT=- COMMAND_LINE=test STAGES=xcheck DRY_RUN=0 EXTRA=(-x 8)
            ROW_STEP=() ROW_RESULT=() ROW_KEY=()
            DATA_FLAGS=(-i data/tinyshakespeare/tiny_shakespeare_train.bin -j data/tinyshakespeare/tiny_shakespeare_val.bin
                -tk data/tinyshakespeare/tokenizer.bin)
            mkdir -p "$WORK" "$LOGDIR"
            XCHECK_GPU_TRAINER=$2 XCHECK_RECIPES=${3:-$XCHECK_RECIPES} stage_xcheck 2>/dev/null
            print_table
            exit "$ANY_FAILED"
        ) >"$tmp/$1.table"
    }
    xcheck_run xcheck_cpu ./train_gpt_fp8_cpu
    rc=$?
    if [ "$rc" -eq 0 ] &&
        [ "$(grep -cE '^\| xcheck_(bf16|fp8_delayed|fp8_current) +\| OK .* \((7|9) passed, 0 failed\)' "$tmp/xcheck_cpu.table")" -eq 3 ] &&
        grep -qE '^\| xcheck_fp8_current +\| OK .*train1 0, val0 0, train 0, val 0, norm 0, fp8 fwd 0, fp8 bwd 0 \(9 passed' \
            "$tmp/xcheck_cpu.table" &&
        [ -z "$(find "$tmp/xcheck_cpu" -name 'state_*' -o -name 'model_*')" ]; then
        pass xcheck_stage_on_the_cpu
    else
        fail xcheck_stage_on_the_cpu "rc $rc: $(cat "$tmp/xcheck_cpu.table")"
    fi
    # the stand-in "GPU trainer": the CPU trainer, then its val loss of step 5 raised by 1%
    cat >"$tmp/off_trainer" <<'EOF'
#!/usr/bin/env bash
out="" prev=""
for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
./train_gpt_fp8_cpu "$@" || exit
awk '/^s:5 tel:/ { split($2, f, ":"); printf "s:5 tel:%.4f\n", f[2] * 1.01; next } { print }' "$out/main.log" \
    >"$out/main.log.tmp" && mv "$out/main.log.tmp" "$out/main.log"
EOF
    chmod +x "$tmp/off_trainer"
    xcheck_run xcheck_off "$tmp/off_trainer" fp8_delayed
    rc=$?
    if [ "$rc" -eq 1 ] && [ "$(grep -cE '^\| xcheck_' "$tmp/xcheck_off.table")" -eq 2 ] &&
        grep -qE '^\| xcheck_model +\| OK' "$tmp/xcheck_off.table" &&
        grep -qE '^  FAIL val loss at step 5: ' "$tmp/xcheck_off/xcheck_fp8_delayed.log" &&
        grep -qE '^\| xcheck_fp8_delayed +\| FAILED .*val 0\.0(099|1)[0-9]*, .*\(8 passed, 1 failed\)' "$tmp/xcheck_off.table"; then
        pass xcheck_stage_fails_a_wrong_val_loss
    else
        fail xcheck_stage_fails_a_wrong_val_loss "rc $rc: $(cat "$tmp/xcheck_off.table")"
    fi
else
    fail xcheck_stage_on_the_cpu "train_gpt_fp8_cpu, dev/compare_runs or the data are missing (make; make data)"
fi

finish gpu-check
