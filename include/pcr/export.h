// PCR_EXPORT marks what libpcr exports; the library is built with
// -fvisibility=hidden, so everything else stays inside it.
#pragma once

#define PCR_EXPORT [[gnu::visibility("default")]]
