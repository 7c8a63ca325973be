// SPDX-License-Identifier: BSD-2-Clause
// The header codecs are templates in headers.hpp; this unit instantiates each
// one once so the library carries them and the compiler checks every table.
#include "wire/headers.hpp"

namespace mrc::wire {

template void encode<Bth>(const Bth&, uint8_t*);
template void encode<Meth>(const Meth&, uint8_t*);
template void encode<Tseth>(const Tseth&, uint8_t*);
template void encode<Reth>(const Reth&, uint8_t*);
template void encode<ImmDt>(const ImmDt&, uint8_t*);
template void encode<Aeth>(const Aeth&, uint8_t*);
template void encode<Seth>(const Seth&, uint8_t*);
template void encode<CcState>(const CcState&, uint8_t*);
template void encode<Neth>(const Neth&, uint8_t*);
template void encode<Peth>(const Peth&, uint8_t*);
template void encode<Erth>(const Erth&, uint8_t*);
template void encode<Eeth>(const Eeth&, uint8_t*);

}  // namespace mrc::wire
