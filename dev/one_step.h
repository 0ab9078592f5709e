/*
dev/one_step.h — a run's model rebuilt from its flags and the step after one of its checkpoints taken as the resumed
trainer takes it: what the dev tools that take one step apart share (dev/cast_one_tensor.c, dev/attention_one_layer.c).
Included after train_gpt_fp8.c (built with TESTING), whose functions it calls.
*/
#ifndef GPTFP8_DEV_ONE_STEP_H
#define GPTFP8_DEV_ONE_STEP_H

// model allocated for the run (one micro-batch a step), checkpoint args->resume_step loaded (0: the run's
// initialization, its weights cast with scale 1.0 as the trainer's start casts them), the data loader where the
// checkpoint left it, then the next batch's forward and backward: model's activations, gradients and FP8 casts are
// that step's. The run's folder is only read.
static void one_step_after_checkpoint(GPT2* model, RunSetup* run, const TrainArgs* args) {
    if (run->grad_accum_steps != 1) {
        die("one micro-step per step only (-d B*T): this tool takes one micro-batch's tensors apart");
    }
    ModelOptions opt = model_options_from_args(args, &run->config);
    gpt2_allocate(model, &opt, run->B, run->T);
    model->total_batch = run->total_batch;
    char err[ERROR_MESSAGE_MAX];
    if (args->resume_step == 0) {
        gpt2_initial_parameters(model, run, args);
        gpt2_cast_weights_fp8(model, 1);
    } else {
        uint64_t rng_state;
        size_t shard_index, shard_position;
        gpt2_load_checkpoint(model, args->output_dir, args->resume_step, &rng_state, &shard_index, &shard_position,
                             NULL);
        if (dataloader_resume(&run->train_loader, shard_index, shard_position, err, sizeof(err))) { die("%s", err); }
        gpt2_cast_weights_fp8(model, 0);
    }
    if (dataloader_next_batch(&run->train_loader, err, sizeof(err))) { die("%s", err); }
    gpt2_zero_grad(model);
    gpt2_forward(model, run->train_loader.inputs, run->train_loader.targets, run->B, run->T);
    gpt2_backward(model, 1.0f);
}

#endif  // GPTFP8_DEV_ONE_STEP_H
