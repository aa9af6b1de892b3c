#include "engine/sequence.hpp"

namespace brisk {

Sequence::Sequence(std::shared_ptr<Request> request, uint64_t seed_, const Tokenizer* tok)
    : req(std::move(request)),
      tokens(req->prompt),
      num_prompt(int64_t(req->prompt.size())),
      seed(seed_),
      processor(req->opts.sampling, req->prompt),
      stops(req->opts.stop) {
  if (tok) detok = std::make_unique<IncrementalDetokenizer>(*tok, true);
}

}  // namespace brisk
