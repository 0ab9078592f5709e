#!/usr/bin/env bash
# scripts/test_profile_step.sh — tests scripts/profile_step.py on CSVs laid out as ncu's raw page (a "==PROF==" line
# before the header, a units row, quoted demangled names with commas in their template and parameter lists, thousands
# separators): kernel names reduced to their base names and put in the right kinds; the exact sums by kind and by
# kernel, in ms from nsecond, usecond and msecond alike; the difference of a second run to the first; the time outside
# kernels against --step-ms; --top; --brief's lines; --out; the SM clock column (each run's time-weighted clock, and
# with --clock-mhz the kernels' sum at the steps' clock at most and the time outside kernels at least; clock units;
# a kernel without a clock; an unknown clock unit left out with a warning); and each bad input (missing file, no
# header, unknown unit, a duration that is not a number, no kernel rows, --step-ms or --clock-mhz after its CSV, a bad
# --top or --clock-mhz) exits 1 with one line naming the problem. Prints "profile-step: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.." || exit 1
. scripts/test_lib.sh
tmp=$TMP
script=scripts/profile_step.py

# expect NAME WANT GOT
expect() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "want '$2', got '$3'"; fi; }
# expect_kind_row NAME ROW OUTPUT: the first line of OUTPUT that holds ROW (a kind's row) is ROW, whole
expect_kind_row() { expect "$1" "$2" "$(printf '%s\n' "$3" | grep -F -- "$2" | head -n 1)"; }
# expect_contains NAME TEXT OUTPUT: TEXT somewhere in OUTPUT
expect_contains() { if printf '%s\n' "$3" | grep -qF -- "$2"; then pass "$1"; else fail "$1" "$3"; fi; }

header='"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"'
# kernel_row NAME DURATION: one data row as ncu writes it
kernel_row() { printf '"0","4242","train_gpt_fp8","127.0.0.1","%s","1","7","(256, 1, 1)","(132, 1, 1)","0","9.0","%s"\n' "$1" "$2"; }
# write_csv FILE UNIT ROWS...: the "==PROF==" note, the header, the units row, then "NAME|DURATION" rows
write_csv() {
    local file=$1 unit=$2 spec
    shift 2
    {
        echo "==PROF== Connected to process 4242 (/work/train_gpt_fp8)"
        echo "$header"
        echo '"","","","","","","","","","","","'"$unit"'"'
        for spec in "$@"; do kernel_row "${spec%%|*}" "${spec##*|}"; done
    } >"$file"
}

# a BF16 step (durations in nsecond, with separators) and an FP8 one (the same kernels in usecond, GEMMs faster, casts
# added): names as cuBLASLt, cuDNN and nvcc's demangler give them
gemm=nvjet_sm90_tst_112x64_64x9_1x2_h_bz_bias_TNN
sdpa=cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0
split='void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, float, __nv_bfloat16, float, (bool)1>(cublasLt::cublasSplitKParams<float>, const float *, __nv_bfloat16 *, long)'
ln='void layernorm_forward_kernel<(int)768>(__nv_bfloat16 *, float *, float *, const __nv_bfloat16 *, int, int)'
cast='void fp8_cast_transpose_amax_kernel<__nv_fp8_e4m3, (bool)0>(__nv_fp8_e4m3 *, __nv_fp8_e4m3 *, float *, const __nv_bfloat16 *, const float *, int, int)'
adamw='void adamw_kernel(float *, float *, float *, __nv_bfloat16 *, const float *, unsigned long, float, float)'
odd='void (anonymous namespace)::mystery_kernel<(int)4>(int)'
write_csv "$tmp/bf16.csv" nsecond "$gemm|1,500,000" "$sdpa|700,000" "$split|8,000" "$ln|20,000" "$gemm|1,500,000" \
    "$adamw|300,000" "$odd|1,000"
write_csv "$tmp/fp8.csv" usecond "$gemm|900" "$sdpa|700" "$split|8" "$ln|20" "$cast|150.5" "$cast|149.5" "$gemm|900" \
    "$adamw|300" "$odd|1"

out=$(python3 "$script" --label bf16 --step-ms 5 "$tmp/bf16.csv" --label fp8 --step-ms 4.5 "$tmp/fp8.csv" --top 3 \
    --out "$tmp/out.md" 2>&1)
rc=$?
expect exit_status 0 "$rc"
# by kind, ms (share of the kernels' sum: bf16 4.029 ms, fp8 3.129 ms): gemm = 2 x 1.5 + 0.008 = 3.008 (74.7%); fp8
# 2 x 0.9 + 0.008 = 1.808 (57.8%)
row() { printf '%s\n' "$out" | grep -E "^\| $1 \|" | head -n 1; }
expect kind_gemm "| gemm | 3.008 (74.7%) | 1.808 (57.8%) | -1.200 |" "$(row gemm)"
expect kind_attention "| attention | 0.700 (17.4%) | 0.700 (22.4%) | +0.000 |" "$(row attention)"
expect kind_fp8_cast "| fp8 cast | 0.000 (0.0%) | 0.300 (9.6%) | +0.300 |" "$(row 'fp8 cast')"
expect kind_layernorm "| layernorm | 0.020 (0.5%) | 0.020 (0.6%) | +0.000 |" "$(row layernorm)"
expect kind_optimizer "| optimizer | 0.300 (7.4%) | 0.300 (9.6%) | +0.000 |" "$(row optimizer)"
expect kind_other "| other | 0.001 (0.0%) | 0.001 (0.0%) | +0.000 |" "$(row other)"
expect kernels_sum "| **kernels' sum** | 4.029 | 3.129 | -0.900 |" "$(row "\*\*kernels' sum\*\*")"
expect kernels_launched "| kernels launched | 7 | 9 | +2 |" "$(row 'kernels launched')"
expect step_ms "| step without the profiler | 5.000 | 4.500 | -0.500 |" "$(row 'step without the profiler')"
expect outside_kernels "| outside kernels (step - sum) | 0.971 | 1.371 |  |" "$(row 'outside kernels \(step - sum\)')"
# kinds ordered by their largest time in any run (a tie in the order of profile_step.py's KINDS)
expect kinds_order "gemm attention fp8 cast optimizer layernorm other" \
    "$(printf '%s\n' "$out" | awk '/^\| \*\*kernels/ { exit } /^\| [a-z]/ && !/^\| kind / { print }' | cut -d'|' -f2 |
        sed 's/^ //; s/ $//' | paste -sd' ' -)"
# GELU inside the FP8 casts: the cast kernel whose template argument is a GELU input is its own kernel and kind
gelu_cast='void fp8_cast_transpose_amax_kernel<(bool)0, (bool)1, GeluBackwardInput>(unsigned char *, unsigned char *, float *, GeluBackwardInput, int, int, const float *, float *, Fp8Format, unsigned long long *)'
write_csv "$tmp/fused.csv" usecond "$cast|100" "$gelu_cast|250" "$gelu_cast|150"
fused_out=$(python3 "$script" --label fp8 "$tmp/fused.csv" 2>&1)
expect kind_gelu_fp8_cast "| gelu + fp8 cast | 0.400 (80.0%) |" "$(printf '%s\n' "$fused_out" | grep -E '^\| gelu \+ fp8 cast \|' | head -n 1)"
expect kind_fp8_cast_apart "| fp8 cast | 0.100 (20.0%) |" "$(printf '%s\n' "$fused_out" | grep -E '^\| fp8 cast \|' | head -n 1)"
expect_contains kernel_gelu_fp8_cast_named_by_its_input \
    "| fp8_cast_transpose_amax_kernel[GeluBackwardInput] | gelu + fp8 cast | 2 | 0.400 |" "$fused_out"
# blockwise's block cast with GELU (template argument 1) or GELU's backward (2) inside: its own kernel and kind too;
# without (0) a plain cast
block_plain='void fp8_block_cast_kernel<(bool)1, (int)0, (bool)1, (int)0>(Fp8BlockKernelArgs)'
block_gelu='void fp8_block_cast_kernel<(bool)0, (int)0, (bool)0, (int)1>(Fp8BlockKernelArgs)'
block_gelu_backward='void fp8_block_cast_kernel<(bool)0, (int)0, (bool)1, (int)2>(Fp8BlockKernelArgs)'
block_layernorm='void fp8_block_cast_kernel<(bool)0, (int)0, (bool)0, (int)3>(Fp8BlockKernelArgs)'
write_csv "$tmp/block.csv" usecond "$block_plain|100" "$block_gelu|200" "$block_gelu_backward|300" "$block_layernorm|400"
block_out=$(python3 "$script" --label blockwise "$tmp/block.csv" 2>&1)
expect_kind_row kind_block_gelu_casts "| gelu + fp8 cast | 0.500 (50.0%) |" "$block_out"
expect_kind_row kind_block_layernorm_cast "| layernorm + fp8 cast | 0.400 (40.0%) |" "$block_out"
expect_kind_row kind_block_plain_cast "| fp8 cast | 0.100 (10.0%) |" "$block_out"
expect_contains kernel_block_gelu_backward_named \
    "| fp8_block_cast_kernel[GeluBackwardInput] | gelu + fp8 cast | 1 | 0.300 |" "$block_out"
expect_contains kernel_block_gelu_named "| fp8_block_cast_kernel[GeluForwardInput] | gelu + fp8 cast | 1 | 0.200 |" \
    "$block_out"
# LayerNorm inside the FP8 cast is its own kind too; the residual add in LayerNorm's pass counts as layernorm
ln_cast='void fp8_cast_transpose_amax_kernel<(bool)0, (bool)0, LayerNormInput>(unsigned char *, unsigned char *, float *, LayerNormInput, int, int, const float *, float *, Fp8Format, unsigned long long *)'
residual_ln='void residual_layernorm_forward_rows_kernel<(int)3>(__nv_bfloat16 *, __nv_bfloat16 *, float *, float *, const __nv_bfloat16 *, const __nv_bfloat16 *, const __nv_bfloat16 *, const __nv_bfloat16 *, int, int)'
residual='void residual_forward_kernel(__nv_bfloat16 *, const __nv_bfloat16 *, const __nv_bfloat16 *, unsigned long, int)'
write_csv "$tmp/ln_fused.csv" usecond "$ln_cast|60" "$residual_ln|30" "$residual|10" "$gelu_cast|100"
ln_out=$(python3 "$script" --label fp8 --top 4 "$tmp/ln_fused.csv" 2>&1)
expect_kind_row kind_layernorm_fp8_cast "| layernorm + fp8 cast | 0.060 (30.0%) |" "$ln_out"
expect_kind_row kind_residual_layernorm "| layernorm | 0.030 (15.0%) |" "$ln_out"
expect_kind_row kind_residual_apart "| residual | 0.010 (5.0%) |" "$ln_out"
expect_contains kernel_layernorm_fp8_cast_named_by_its_input \
    "| fp8_cast_transpose_amax_kernel[LayerNormInput] | layernorm + fp8 cast | 1 | 0.060 |" "$ln_out"
# current scaling's amax pass: over a made input, beside its fused cast; over a bf16 tensor, a plain fp8 cast
amax_gelu='void fp8_amax_scale_kernel<GeluForwardInput>(GeluForwardInput, unsigned long, unsigned long, Fp8CurrentScale, float, Fp8AmaxWorkspace)'
amax_ln='void fp8_amax_scale_kernel<LayerNormInput>(LayerNormInput, unsigned long, unsigned long, Fp8CurrentScale, float, Fp8AmaxWorkspace)'
amax_plain='void fp8_amax_scale_kernel<Fp8CastInputBf16>(Fp8CastInputBf16, unsigned long, unsigned long, Fp8CurrentScale, float, Fp8AmaxWorkspace)'
write_csv "$tmp/current.csv" usecond "$amax_gelu|40" "$amax_ln|20" "$amax_plain|10" "$gelu_cast|100"
current_out=$(python3 "$script" --label fp8_current --top 4 "$tmp/current.csv" 2>&1)
expect_kind_row kind_current_gelu_amax_pass "| gelu + fp8 cast | 0.140 (82.4%) |" "$current_out"
expect_kind_row kind_current_layernorm_amax_pass "| layernorm + fp8 cast | 0.020 (11.8%) |" "$current_out"
expect_kind_row kind_current_plain_amax_pass "| fp8 cast | 0.010 (5.9%) |" "$current_out"
expect_contains kernel_current_amax_pass_named_by_its_input \
    "| fp8_amax_scale_kernel[GeluForwardInput] | gelu + fp8 cast | 1 | 0.040 |" "$current_out"
# per kernel: base names (no return type, template arguments or parameters), calls, ms, mean us, share; --top 3
fp8_top=$(printf '%s\n' "$out" | sed -n '/^### fp8: /,$p')
if printf '%s\n' "$fp8_top" | grep -qxF "| $gemm | gemm | 2 | 1.800 | 900.0 | 57.5% |" &&
    printf '%s\n' "$fp8_top" | grep -qxF "| $sdpa | attention | 1 | 0.700 | 700.0 | 22.4% |" &&
    printf '%s\n' "$fp8_top" | grep -qxF "| fp8_cast_transpose_amax_kernel | fp8 cast | 2 | 0.300 | 150.0 | 9.6% |" &&
    printf '%s\n' "$fp8_top" | grep -qF '### fp8: the 3 kernels' && [ "$(printf '%s\n' "$fp8_top" | grep -c '^| [a-z]')" -eq 4 ]; then
    pass top_kernels
else
    fail top_kernels "$fp8_top"
fi
if python3 "$script" --top 10 "$tmp/bf16.csv" | grep -qxF '| cublasLt::splitKreduce_kernel | gemm | 1 | 0.008 | 8.0 | 0.2% |'; then
    pass library_name_reduced
else
    fail library_name_reduced "$(python3 "$script" --top 10 "$tmp/bf16.csv")"
fi
if python3 "$script" --top 10 "$tmp/bf16.csv" | grep -qxF '| anonymous_namespace::mystery_kernel | other | 1 | 0.001 | 1.0 | 0.0% |'; then
    pass unknown_kernel_is_other
else
    fail unknown_kernel_is_other "$(python3 "$script" --top 10 "$tmp/bf16.csv")"
fi
if cmp -s <(printf '%s\n' "$out") "$tmp/out.md"; then pass out_file_holds_the_tables; else fail out_file_holds_the_tables "differs"; fi

# milliseconds as the unit: the same sum
write_csv "$tmp/ms.csv" msecond "$gemm|1.5" "$ln|0.02"
expect unit_msecond "| **kernels' sum** | 1.520 |" "$(python3 "$script" "$tmp/ms.csv" | grep -F "| **kernels' sum")"

# --brief: one line per run, then the differences
brief=$(python3 "$script" --brief --label bf16 --step-ms 5 "$tmp/bf16.csv" --label fp8 --step-ms 4.5 "$tmp/fp8.csv")
expect brief_lines "bf16: 7 kernels, 4.029 ms of 5.000 ms/step; gemm 3.008, attention 0.700, optimizer 0.300
fp8: 9 kernels, 3.129 ms of 4.500 ms/step; gemm 1.808, attention 0.700, fp8 cast 0.300
fp8 - bf16: kernels -0.900 ms, step -0.500 ms; gemm -1.200, fp8 cast +0.300, attention +0.000" "$brief"

# bad input: exit 1, one line on stderr, naming the problem
# expect_error NAME PATTERN ARGS...
expect_error() {
    local name=$1 pattern=$2
    shift 2
    python3 "$script" "$@" >"$tmp/err_out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^profile_step: error: .*$pattern" "$tmp/err"; then
        pass "$name"
    else
        fail "$name" "rc $rc: $(cat "$tmp/err")"
    fi
}
expect_error missing_file "cannot read" "$tmp/no_such.csv"
printf 'a,b\n1,2\n' >"$tmp/noheader.csv"
expect_error no_header "no header row" "$tmp/noheader.csv"
write_csv "$tmp/unit.csv" cycle "$gemm|1"
expect_error unknown_unit "unknown unit 'cycle'" "$tmp/unit.csv"
write_csv "$tmp/nan.csv" nsecond "$gemm|n/a"
expect_error duration_not_a_number "duration 'n/a' is not a number" "$tmp/nan.csv"
write_csv "$tmp/empty.csv" nsecond
expect_error no_kernel_rows "no kernel rows" "$tmp/empty.csv"
expect_error step_ms_after_csv "go before the CSV" "$tmp/bf16.csv" --step-ms 5
expect_error step_ms_not_a_number "'abc' is not a number" --step-ms abc "$tmp/bf16.csv"
expect_error top_zero "must be positive" --top 0 "$tmp/bf16.csv"
expect_error no_csv "no CSV given"
expect_error unknown_option "unknown option --bogus" --bogus "$tmp/bf16.csv"

# the SM clock: ncu's sm__cycles_elapsed.avg.per_second per kernel (base unit cycle/second) gives each run's
# time-weighted clock; with --clock-mhz (the timed steps' clock) the kernels' sum at that clock at most, each kernel
# t * max(1, f / F), and the time outside kernels at least. gemm 1.5 ms at 1980 MHz, layernorm 0.5 at 1800, adamw 0.1
# at 1700 (below the steps' 1800: its time kept): clock (1.5 * 1980 + 0.5 * 1800 + 0.1 * 1700) / 2.1 = 1923.8; at 1800
# at most 1.5 * 1.1 + 0.5 + 0.1 = 2.250 ms, so at least 2.5 - 2.25 = 0.250 ms outside kernels
CLOCK_METRIC=sm__cycles_elapsed.avg.per_second
clock_header="$header,\"$CLOCK_METRIC\""
# write_clock_csv FILE CLOCK_UNIT ROWS...: as write_csv, durations in usecond, rows "NAME|DURATION|CLOCK"
write_clock_csv() {
    local file=$1 unit=$2 spec name rest
    shift 2
    {
        echo "$clock_header"
        echo '"","","","","","","","","","","","usecond","'"$unit"'"'
        for spec in "$@"; do
            name=${spec%%|*} rest=${spec#*|}
            printf '%s,"%s"\n' "$(kernel_row "$name" "${rest%%|*}")" "${rest#*|}"
        done
    } >"$file"
}
write_clock_csv "$tmp/clock.csv" cycle/second "$gemm|1,500|1,980,000,000" "$ln|500|1,800,000,000" \
    "$adamw|100|1,700,000,000"
clock_out=$(python3 "$script" --label bf16 --step-ms 2.5 --clock-mhz 1800 "$tmp/clock.csv" 2>&1)
expect_kind_row clock_under_ncu "| SM clock under ncu, MHz (time-weighted) | 1924 |" "$clock_out"
expect_kind_row clock_of_the_steps "| SM clock of the timed steps, MHz (nvidia-smi) | 1800 |" "$clock_out"
expect_kind_row sum_at_the_steps_clock "| kernels' sum at the steps' clock, at most | 2.250 |" "$clock_out"
expect_kind_row outside_at_least "| outside kernels, at least (step - that) | 0.250 |" "$clock_out"
expect_kind_row outside_still_step_minus_sum "| outside kernels (step - sum) | 0.400 |" "$clock_out"
expect clock_brief "bf16: 3 kernels, 2.100 ms at 1924 MHz of 2.500 ms/step at 1800 MHz, >= 0.250 ms outside kernels; gemm 1.500, layernorm 0.500, optimizer 0.100" \
    "$(python3 "$script" --brief --label bf16 --step-ms 2.5 --clock-mhz 1800 "$tmp/clock.csv" 2>&1)"
# a second run without --clock-mhz: its cells "-", the difference columns blank
two_out=$(python3 "$script" --label a --step-ms 2.5 --clock-mhz 1800 "$tmp/clock.csv" --label b --step-ms 2.5 \
    "$tmp/clock.csv" 2>&1)
expect_kind_row clock_rows_two_runs "| kernels' sum at the steps' clock, at most | 2.250 | - |  |" "$two_out"
expect_kind_row clock_of_steps_two_runs "| SM clock of the timed steps, MHz (nvidia-smi) | 1800 | - |  |" "$two_out"
# the same clocks in cycle/nsecond (a scaled unit) and GHz: the same MHz
write_clock_csv "$tmp/clock_ns.csv" cycle/nsecond "$gemm|1,500|1.98" "$ln|500|1.8" "$adamw|100|1.7"
write_clock_csv "$tmp/clock_ghz.csv" GHz "$gemm|1,500|1.98" "$ln|500|1.8" "$adamw|100|1.7"
expect clock_unit_cycle_per_nsecond "bf16: 3 kernels, 2.100 ms at 1924 MHz of 2.500 ms/step at 1800 MHz, >= 0.250 ms outside kernels; gemm 1.500, layernorm 0.500, optimizer 0.100" \
    "$(python3 "$script" --brief --label bf16 --step-ms 2.5 --clock-mhz 1800 "$tmp/clock_ns.csv" 2>&1)"
expect clock_unit_ghz "bf16: 3 kernels, 2.100 ms at 1924 MHz; gemm 1.500, layernorm 0.500, optimizer 0.100" \
    "$(python3 "$script" --brief --label bf16 "$tmp/clock_ghz.csv" 2>&1)"
# a kernel without a clock ("n/a"): the mean over the others, no bound (it could be any clock)
write_clock_csv "$tmp/clock_na.csv" cycle/second "$gemm|1,500|1,980,000,000" "$ln|500|n/a"
expect clock_missing_value "bf16: 2 kernels, 2.000 ms at 1980 MHz of 2.500 ms/step at 1800 MHz; gemm 1.500, layernorm 0.500" \
    "$(python3 "$script" --brief --label bf16 --step-ms 2.5 --clock-mhz 1800 "$tmp/clock_na.csv" 2>&1)"
if ! printf '%s\n' "$(python3 "$script" --step-ms 2.5 --clock-mhz 1800 "$tmp/clock_na.csv")" | grep -qF 'at most'; then
    pass clock_missing_value_no_bound
else
    fail clock_missing_value_no_bound "a bound with a kernel of unknown clock"
fi
# a clock unit not known here: the clocks left out with one warning, the times as ever, exit 0
write_clock_csv "$tmp/clock_unit.csv" furlong/fortnight "$gemm|1,500|3" "$ln|500|3"
unit_brief=$(python3 "$script" --brief --step-ms 2.5 --clock-mhz 1800 "$tmp/clock_unit.csv" 2>"$tmp/clock_unit.err")
rc=$?
if [ "$rc" -eq 0 ] && [ "$unit_brief" = "$tmp/clock_unit.csv: 2 kernels, 2.000 ms of 2.500 ms/step at 1800 MHz; gemm 1.500, layernorm 0.500" ] &&
    [ "$(wc -l <"$tmp/clock_unit.err")" -eq 1 ] &&
    grep -q "^profile_step: warning: .*unknown unit 'furlong/fortnight' for $CLOCK_METRIC" "$tmp/clock_unit.err"; then
    pass clock_unknown_unit_left_out
else
    fail clock_unknown_unit_left_out "rc $rc: $unit_brief / $(cat "$tmp/clock_unit.err")"
fi
# --clock-mhz: a positive number, before its CSV
expect_error clock_mhz_not_a_number "--clock-mhz 'fast' is not a number" --clock-mhz fast "$tmp/clock.csv"
expect_error clock_mhz_zero "--clock-mhz must be positive" --clock-mhz 0 "$tmp/clock.csv"
expect_error clock_mhz_nan "--clock-mhz must be positive" --clock-mhz nan "$tmp/clock.csv"
expect_error clock_mhz_after_csv "go before the CSV" "$tmp/clock.csv" --clock-mhz 1800

finish profile-step
