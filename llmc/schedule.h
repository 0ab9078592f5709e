/*
llmc/schedule.h — the learning-rate schedule both trainers use: linear warmup, then cosine decay down to
final_fraction * lr at the last step (llm.c's cosine schedule).
*/
#ifndef GPTFP8_SCHEDULE_H
#define GPTFP8_SCHEDULE_H

#include <math.h>

static inline float learning_rate_at(int step, int max_steps, float lr, int warmup_steps, float final_fraction) {
    if (step < warmup_steps) { return lr * (float)(step + 1) / (float)warmup_steps; }
    float min_lr = lr * final_fraction;
    if (max_steps <= warmup_steps) { return min_lr; }
    float decay_ratio = (float)(step - warmup_steps) / (float)(max_steps - warmup_steps);
    if (decay_ratio > 1.0f) { decay_ratio = 1.0f; }
    float coeff = 0.5f * (1.0f + cosf(3.14159265358979f * decay_ratio));  // 1 -> 0
    return min_lr + coeff * (lr - min_lr);
}

#endif  // GPTFP8_SCHEDULE_H
