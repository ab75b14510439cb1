#!/usr/bin/env bash
# Data, tensor and context parallelism's transparency over MPI, for T, C, K,
# D in {1, 2, 4} with T x C x K x D up to 4: every process of each launch trains its
# part of its rank of its replica and checks its weights (and the reporter
# every step's loss) against one process training the global batch on one
# stage (parallel_transparency.cpp). The models: the MLP under GPipe, 1F1B,
# interleaved 1F1B and ZB-V (whose reduction starts after a stage's last W),
# with momentum, and with AdamW; llama (GQA) with momentum and with SGD, and
# tied (tied=1); the transformer with dropout; and ZeRO 1 over the replicas.
# Exit 77 (skipped) where there is no mpirun.
# Usage: parallel_transparency_test.sh PROGRAM
set -u
program=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
launch=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
mlp=mlp:layers=4,hidden=16
llama=llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32
failed=0
check() {  # MODEL SCHEDULE K D M N OPTIMIZER [T [ZERO [C]]]
  local parts=${8:-1}
  local zero=${9:-0}
  local members=${10:-1}
  local processes=$(($3 * $4 * parts * members))
  local out
  out=$(timeout 240 "${launch[@]}" -np $processes "$program" "$1" "$2" "$3" "$4" "$5" "$6" 3 "$7" "$parts" "$zero" \
    "$members" 2>&1)
  local status=$?
  local equal
  equal=$(grep -c ': equal, ' <<<"$out")
  if [ $status -ne 0 ] || [ "$equal" -ne $processes ]; then
    echo "FAIL: $* (exit $status, $equal of $processes processes equal):"
    echo "$out"
    failed=1
  else
    grep ': equal, ' <<<"$out" | grep -v 'not the reporter'
  fi
}
check $mlp gpipe 1 2 2 4 momentum
check $mlp 1f1b 2 2 4 4 momentum
check $mlp gpipe 1 4 1 2 momentum
check $mlp 1f1b 2 1 4 8 momentum
check $mlp gpipe 2 2 2 4 adamw
check $llama 1f1b 2 2 2 2 momentum
check $llama gpipe 1 2 2 2 sgd
check $mlp interleaved-1f1b 2 2 4 4 momentum
check $mlp zbv 2 2 4 4 momentum
# A tied embedding over replicas: each end's gradient summed over them, the
# other end's copy too, at K = 2 (1F1B and ZB-V, whose rank 0 holds both
# ends) and K = 1 (one stage holds both).
tied=llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32,tied=1
check $tied 1f1b 2 2 2 2 momentum
check $tied zbv 2 2 4 4 momentum
check $tied gpipe 1 2 2 2 sgd
# Tensor parallelism: the blocks' heads and feed-forward columns over T = 2
# (the transformer's biases too), alone, with K = 2 and with D = 2.
gpt=transformer:layers=3,hidden=32,heads=4,seq=16,vocab=64
check $gpt gpipe 1 1 2 4 momentum 2
check $gpt gpipe 1 1 2 4 adamw 2
check $gpt 1f1b 2 1 2 4 momentum 2
check $gpt gpipe 1 2 2 4 momentum 2
check $llama 1f1b 2 1 2 2 momentum 2
check $llama gpipe 1 2 2 2 sgd 2
check $gpt gpipe 1 1 2 4 momentum 4
# Split parts with a split backward (ZB-V: I, then W on the part's shapes)
# and with a tied embedding (its ends whole in every part).
check $gpt zbv 2 1 4 4 momentum 2
check $tied 1f1b 2 1 2 2 momentum 2
# Dropout: each sample's masks drawn from its row in the mini-batch, so
# every replica, part and micro-batch drops what the one-process run drops
# (the probabilities' by the part's heads).
dropped=transformer:layers=3,hidden=32,heads=4,seq=16,vocab=64,dropout=0.25
check $dropped 1f1b 2 2 2 4 momentum
check $dropped gpipe 1 1 2 4 momentum 2
check $dropped,attn=flash zbv 2 1 4 4 momentum 2
# ZeRO 1: each replica updates its share of every stage's values (AdamW's
# and momentum's state for it only) and all-gathers the weights in STEP: D =
# 2 and 4, with K = 2, with a split backward, a tied embedding and T = 2.
check $mlp gpipe 1 2 2 4 adamw 1 1
check $mlp 1f1b 2 2 4 4 momentum 1 1
check $mlp gpipe 1 4 1 2 momentum 1 1
check $mlp zbv 2 2 4 4 adamw 1 1
check $tied 1f1b 2 2 2 2 momentum 1 1
check $gpt gpipe 1 2 2 4 adamw 2 1
# Context parallelism (llama, flash attention): each sequence over C = 2 or
# 4 processes, chunks i and 2C-1-i each (at C = 4 one token a chunk), keys
# and values all-gathered, gradients summed over D x C; alone, with K = 2
# (1F1B, and ZB-V's split backward), with D = 2, with a tied embedding, and
# with tensor parallelism.
check $llama gpipe 1 1 2 2 momentum 1 0 2
check $llama gpipe 1 1 2 2 adamw 1 0 4
check $llama 1f1b 2 1 2 2 momentum 1 0 2
check $llama zbv 2 1 4 4 momentum 1 0 2
check $llama gpipe 1 2 2 2 sgd 1 0 2
check $tied 1f1b 2 1 2 2 momentum 1 0 2
# Both: each member's blocks split over T = 2 parts (part t of member c at
# world rank c T + t), alone and with K = 2 under ZB-V.
check $llama gpipe 1 1 2 2 momentum 2 0 2
check $llama zbv 2 1 4 4 sgd 2 0 2
