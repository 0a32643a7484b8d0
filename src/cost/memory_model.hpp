// Per-GPU memory (docs/model.md §6), term by term as training frameworks allocate it. Strategies fill a
// MemoryBreakdown for every GPU and keep the largest; the report prints the peak and its
// composition, marks a configuration that exceeds the GPU's memory as infeasible (naming the
// largest term) and, for FSSDP without re-materialization, says whether re-materialization fits.
//
// Terms (bytes):
//   params, grads, optimizer  what the GPU owns: dense parameters + its experts, their gradients,
//                             fp32 master weights + optimizer moments (ModelSpec::Precision).
//   activations               kept for backward, one micro-batch in flight (see activation_bytes).
//   copy_params, copy_grads   materialized copies of experts the GPU does not own (FSSDP, FSDP;
//                             FasterMoE's shadows) and their gradient buffers, resident at the
//                             iteration's peak (copy_buffer_peak: lifetimes in issue order).
//   comm_buffers              all-to-all send + receive buffers of the MoE layer in flight.
//   nccl                      NCCL's own connection buffers (nccl_buffer_bytes).
//   reserve                   what no term above names: the CUDA context and kernel images,
//                             cuBLAS/cuDNN workspaces and the caching allocator's fragmentation;
//                             1 GiB (an allowance, not derived; NCCL is no longer inside it).
//
// Activation accounting (one micro-batch in flight; micro-batches of a gradient-accumulation step
// run one after another): per block, attention + norms keep 15*s*b*h*(act_bytes/2) bytes
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4.1,
// eq. 1 / Table 2: attention 11sbh + two layer norms 4sbh, in 2-byte elements). With standard
// (unfused) attention each block also keeps 5*a*s^2*b*(act_bytes/2) bytes, the paper's 5as^2b:
// softmax output 2as^2b, dropout mask as^2b, dropout output 2as^2b (s x s per head); without
// attention dropout (attention_dropout: 0) the softmax output alone, 2as^2b; flash attention keeps no
// s^2 tensor. The implementation is m.attention as resolved where the model met the
// topology (cost::resolve_attention); a still-kAuto model counts as flash, what a GPU of unknown
// compute capability (assumed 8.0) runs. An MoE layer keeps, per routed token received, its input (h)
// and the FFN intermediates (n_mats * d_ffn), plus the combine's copies of the expert outputs
// returned (combine_kept_per_token); the LM head keeps fp32 logits (tokens x vocab x 4).
//
// As trained (model fields `precision.compute`, `recompute`, `mla`; DeepSeek-V3, arXiv
// 2412.19437, §3.2.3 and §3.3.3), per token and block, bytes (h = d_model, ab = activation bytes,
// c = kFp8CachedBytes = 1 + 4/128: an FP8 element and its share of a 1x128 tile's fp32 scale):
//   attention, Korthikanti's 15sbh by tensor      default   rmsnorm   up_proj      fp8
//     the two norms' inputs (residual stream)     2 h ab/2*2   kept      kept        kept
//     QKV projection input (a norm's output)      h ab        0         kept         h c
//     Q, K, V (the attention core's inputs)       3 h ab      kept      latents ab   kept
//     output projection input                     h ab        kept      kept         h (1.5 + 4/128)
//     dropout mask                                h ab/2      kept      kept         kept
//   (the output projection's input is kept in DeepSeek's E5M6, 12 bits, §3.3.3). With MLA (`mla`,
//   workload::MlaGeometry) Q and K are H (nope + rope) wide and V and the output projection's input
//   H v, so Q, K, V are (2 qk + v) ab; under up_proj the latents, ModelSpec::mla_latent() ab. An MLP (dense FFN,
//   shared or routed expert) per token: its input (a norm's output for dense FFNs and shared experts:
//   dropped under rmsnorm; the received token for routed experts) h ab, FP8: h c; its intermediates
//   n_mats d_ffn ab, FP8: SwiGLU keeps its input (gate and up outputs, 2 d_ffn c) and recomputes its
//   output (§3.3.3), a plain MLP keeps the activation's input (d_ffn ab) and output (d_ffn c). The
//   output head's fp32 logits and the combine's copies stay as they are.
//
// All-to-all buffers. Megatron-LM's all-to-all token dispatcher permutes a layer's routed tokens
// into one send buffer (tokens sent x h x act_bytes) and receives into another (tokens received x
// h x act_bytes); the combine runs the same exchange backwards, and backward runs both again for
// the gradients. The dispatch's two buffers are the permuted copies and the expert inputs that
// activations already keep for backward; the combine's and the backward exchanges' are transient,
// one layer's at a time: comm_buffers = (sent + received) x h x act_bytes of the layer in flight,
// per micro-batch, the largest over layers (a2a_buffer_bytes in strategy/gpu_memory.hpp).
#pragma once

#include <array>
#include <span>
#include <string>

#include "util/units.hpp"
#include "workload/model_spec.hpp"

namespace hs::cost {

struct MemoryTerm {
  const char* key;    // JSON key, e.g. "copy_params"
  const char* label;  // for people, e.g. "copy params"
  double bytes;
};
inline constexpr int kMemoryTerms = 9;

struct MemoryBreakdown {
  double params = 0;        // working-precision parameters owned (dense + owned experts)
  double grads = 0;         // their gradients
  double optimizer = 0;     // master weights + optimizer moments
  double activations = 0;   // kept for backward
  double copy_params = 0;   // materialized copies' / shadows' parameters at the peak
  double copy_grads = 0;    // their gradient buffers at the peak
  double comm_buffers = 0;  // all-to-all send + receive buffers of the layer in flight
  double nccl = 0;          // NCCL connection buffers
  double reserve = 0;       // CUDA context, library workspaces, allocator fragmentation
  // Every term in a fixed order (reports iterate it); the terms add up to total().
  std::array<MemoryTerm, kMemoryTerms> terms() const;
  double total() const;
  // Label of the largest term, for "does not fit: largest term: activations".
  std::string largest() const;
};

struct ParamCounts {
  double dense = 0;              // attention, norms, router gates, dense FFNs, shared experts, embeddings
  double dense_per_block = 0;    // what one block contributes (for per-block gradient buckets)
  double per_expert = 0;         // one routed expert
};

ParamCounts count_params(const workload::ModelSpec& m);

// Optimizer-side bytes per parameter the GPU holds for what it owns: master weights, moments and,
// with `ema: gpu`, the fp32 EMA copy.
double optimizer_state_bytes_per_param(const workload::ModelSpec& m);
inline constexpr double kEmaBytesPerParam = 4;  // fp32

// Bytes of one FP8-cached activation element: 1 B and one fp32 scale per 1x128 tile.
inline constexpr double kFp8CachedBytes = 1.0 + 4.0 / 128;
// DeepSeek-V3's E5M6 cache of the attention output projection's input (12 bits, §3.3.3).
inline constexpr double kE5M6CachedBytes = 1.5 + 4.0 / 128;

// Bytes per token one block's attention keeps for backward (the table above), split into what
// tensor parallelism leaves whole without sequence parallelism (norm inputs, the QKV input, the
// dropout mask) and what it splits t-ways (Q, K, V and the output projection's input).
struct AttentionKept {
  double replicated = 0;
  double split = 0;
  double total() const { return replicated + split; }
};
AttentionKept attention_kept_per_token(const workload::ModelSpec& m);
// Bytes unfused (standard) attention keeps per score element (a s^2 b of them per block): the
// softmax output, and with attention dropout its mask and output: (5 or 2) x act_bytes / 2.
double attention_score_kept_bytes(const workload::ModelSpec& m);

// Bytes per token an MoE layer's combine keeps for backward: its top_k returned copies (top_k x h x
// activation bytes) for the router probabilities' gradient, or nothing when the probabilities
// multiply inside the experts' activation (ModelSpec::probs_in_activation).
double combine_kept_per_token(const workload::ModelSpec& m);
// An MTP module's own parameters beside its block (ModelSpec::mtp_layers): the 2d -> d projection
// M_k, split over tp, and three RMSNorms (the hidden state's, the embedding's and the module's final
// one before the shared head: DeepSeek-V3's hnorm, enorm and shared_head.norm). The embedding and
// the head are the main model's (the stage of the loss holds them: the tied copy, or DualPipe's
// stage 0 holding the first and the last piece).
double mtp_extra_params(const workload::ModelSpec& m, int tp);
// Bytes per token an MTP module keeps for backward beside its block: the two norms' inputs (none
// with rmsnorm recomputed) and the projection's 2d input (FP8-cached for FP8 models).
double mtp_kept_per_token(const workload::ModelSpec& m);
// Bytes per token an MLP of width `d_ffn` keeps for backward: `swiglu` (3 matrices) or plain (2);
// `input_is_norm_output` (dense FFN, shared expert) or a routed token.
double mlp_kept_per_token(const workload::ModelSpec& m, double d_ffn, bool swiglu, bool input_is_norm_output);

// Activation bytes for one micro-batch, given the routed tokens this GPU receives per MoE layer
// (summed over MoE layers) and the tokens it sends (permuted copies).
double activation_bytes(const workload::ModelSpec& m, double received_tokens_all_layers);

inline constexpr double kRuntimeReserveBytes = 1024.0 * 1024 * 1024;

// --- Copy buffers -----------------------------------------------------------------------------
// Lifetimes of materialized copies (Hecate, arXiv 2502.02581, §4: spAG before a layer's forward,
// spRS of the copies' gradients in the attention backward that follows the layer's backward), in
// issue order over one iteration, for one GPU holding copies[l] copies of MoE layer l:
//   * without re-materialization a layer's copies are gathered before its forward and freed after
//     its backward: at the forward's end every layer's copies are resident;
//   * with re-materialization they are freed after the layer's forward and gathered again for its
//     backward; the layer in use and the one being gathered are resident together (forward: l and
//     l+1; backward: l and l-1, gathered during the attention backward before it);
//   * a copy's gradient buffer lives from the layer's backward until spRS drains it into the
//     owner. With one NCCL queue (Hecate's runtime; comm_queue=single) spRS(l) drains before the
//     next layer's gradient all-to-all, so one layer's gradient buffers at a time; on a stream of
//     its own it may still be draining while layer l-1's backward fills its buffers
//     (grads_overlap_next: l and l-1 together);
//   * a split backward (ZB-H1, DualPipe: B computes the input gradients, W later the weight
//     gradients, arXiv 2401.10241 §3.1) fills a copy's gradient buffer in the W op, which issues no
//     all-to-all: nothing holds W(l-1) behind spRS(l), so the W op can run through the layers while
//     their spRS still queue, and every layer whose W has run may hold its gradient buffers at once
//     (grads_pile_up: at layer l's backward, layers l..L-1's). Its B needs the copies' parameters
//     (dX = dY W^T), as a whole backward does.
struct CopyLifetime {
  bool rematerialize = false;
  bool grads_overlap_next = false;
  bool grads_pile_up = false;
};
struct CopyPeak {
  double params = 0, grads = 0;  // bytes resident at the peak instant
  double total() const { return params + grads; }
};
// Peak over the iteration's instants (forward of each layer, backward of each layer) of copy
// parameters + gradient buffers; param_bytes / grad_bytes are one copy's.
CopyPeak copy_buffer_peak(std::span<const double> copies, double param_bytes, double grad_bytes, const CopyLifetime& life);

// The memory cap on copies, per GPU (FSSDP's m, per layer): the largest level in [0, max_level]
// such that every layer keeping min(demand[l], level) copies fits in `budget` bytes under `life`.
// Layers that want fewer copies than the level keep all of theirs; those that want more are cut to
// it (water-filling: heterogeneous per layer). max_level when everything fits, 0 when nothing does.
int copy_cap_level(std::span<const double> demand, double budget, double param_bytes, double grad_bytes,
                   const CopyLifetime& life, int max_level);

// --- NCCL buffers -------------------------------------------------------------------------------
// NCCL allocates, per connection (one per channel and peer it talks to), a receive buffer for each
// protocol (NCCL docs, Environment Variables, NCCL_BUFFSIZE: "the size of the buffer used by NCCL
// when communicating data between pairs of GPUs ... The default is 4194304 (4 MiB)"; NCCL
// src/init.cc DEFAULT_LL_BUFFSIZE = 8 lines x 512 threads x 8 steps x 16 B = 512 KiB and
// DEFAULT_LL128_BUFFSIZE = 120 elements x 640 threads x 8 steps x 8 B = 4,915,200 B). One
// connection: kNcclConnectionBytes = 4 MiB + 512 KiB + 4,915,200 B = 9,633,792 B.
//   * Collectives (rings): one connection per channel, from the previous GPU of the ring.
//   * Point-to-point (all-to-all, spAG/spRS chains; ncclSend/ncclRecv connect every peer they
//     address): per peer NCCL uses p2pnChannelsPerPeer channels (src/graph/paths.cc,
//     ncclTopoGetNchannels: 2 for a network peer, NCCL_NCHANNELS_PER_NET_PEER; 2 x NVLink
//     bandwidth ratio, at least 2, for an NVLink peer; the minimum over peers, rounded to a power
//     of two: 2 whenever the communicator spans nodes, and 2 taken as well within a node). Peers
//     in the node use the P2P transport with dedicated buffers ("Intranode P2P transfers always
//     have dedicated LL buffers allocated", NCCL_ALLOC_P2P_NET_LL_BUFFERS): intra_peers x 2 x
//     kNcclConnectionBytes. Peers in other nodes share one pool per direction
//     (NCCL_NET_SHARED_BUFFERS, default 1: "a single large pool for all remote peers, having a
//     constant memory usage"; src/transport/net.cc sharedNetBuffersInit: p2p channels x
//     NCCL_SHARED_STEPS 16 x NCCL_P2P_NET_CHUNKSIZE 128 KiB): 2 x p2p_channels x 16 x 128 KiB,
//     p2p_channels = the communicator's channels rounded up to a power of two
//     (ncclTopoComputeP2pChannels).
//     No LL buffers for network peers (NCCL_ALLOC_P2P_NET_LL_BUFFERS defaults to 0).
// With NCCL_RUNTIME_CONNECT (default 1 since 2.22) only the connections a communicator uses are
// made, so a communicator that only runs all-to-alls has no ring buffers.
inline constexpr double kNcclSimpleBuffBytes = 4194304;  // NCCL_BUFFSIZE default
inline constexpr double kNcclLlBuffBytes = 524288;
inline constexpr double kNcclLl128BuffBytes = 4915200;
inline constexpr double kNcclConnectionBytes = kNcclSimpleBuffBytes + kNcclLlBuffBytes + kNcclLl128BuffBytes;
inline constexpr int kNcclP2pChannelsPerPeer = 2;
inline constexpr double kNcclSharedSteps = 16;
inline constexpr double kNcclP2pNetChunkBytes = 131072;  // NCCL_P2P_NET_CHUNKSIZE default

// One NCCL communicator as one of its GPUs sees it.
struct NcclCommunicator {
  int channels = 1;       // the communicator's channels (collective::default_ring_channels)
  bool ring = false;      // ring connections made: it runs collectives
  bool p2p = false;       // send/recv to every peer (all-to-all, sparse collectives)
  int intra_peers = 0;    // other GPUs of the communicator in this GPU's node
  int inter_peers = 0;    // in other nodes
};
double nccl_buffer_bytes(const NcclCommunicator& c);

}  // namespace hs::cost
